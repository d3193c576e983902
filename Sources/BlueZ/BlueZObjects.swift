/// An adapter as BlueZ describes it (`org.bluez.Adapter1`).
public struct AdapterState: Hashable, Sendable {
    /// `/org/bluez/hci0`
    public var path: String
    public var address: BluetoothAddress?
    public var powered: Bool
    public var discovering: Bool
    /// `PowerState` (BlueZ ≥ 5.66): "on", "off", "off-blocked" (rfkill), "off-enabling", "on-disabling".
    public var powerState: String?

    /// `hci0`
    public var name: String { String(path.split(separator: "/").last ?? "") }
    /// Powered off because rfkill blocks it.
    public var isBlocked: Bool { powerState == "off-blocked" }

    init(path: String, properties: [String: DBusValue]) {
        self.path = path
        self.address = properties["Address"]?.string.flatMap(BluetoothAddress.init)
        self.powered = properties["Powered"]?.bool ?? false
        self.discovering = properties["Discovering"]?.bool ?? false
        self.powerState = properties["PowerState"]?.string
    }

    mutating func apply(_ changed: [String: DBusValue]) {
        if let value = changed["Address"]?.string { address = BluetoothAddress(value) }
        if let value = changed["Powered"]?.bool { powered = value }
        if let value = changed["Discovering"]?.bool { discovering = value }
        if let value = changed["PowerState"]?.string { powerState = value }
    }
}

/// A device as BlueZ describes it (`org.bluez.Device1`), with what its last advertisement said.
public struct DeviceState: Hashable, Sendable {
    /// `/org/bluez/hci0/dev_00_BB_01_00_00_00`
    public var path: String
    public var adapterPath: String
    public var address: BluetoothAddress?
    public var name: String?
    public var rssi: Int?
    public var txPower: Int?
    /// Keyed by the 128-bit UUID string BlueZ uses.
    public var serviceData: [String: [UInt8]]
    /// Keyed by company id.
    public var manufacturerData: [Int: [UInt8]]
    public var uuids: [String]
    public var connected: Bool
    public var servicesResolved: Bool

    init(path: String, properties: [String: DBusValue]) {
        self.path = path
        self.adapterPath = properties["Adapter"]?.string ?? Self.adapterPath(of: path)
        self.address = properties["Address"]?.string.flatMap(BluetoothAddress.init)
        self.name = properties["Name"]?.string
        self.rssi = properties["RSSI"]?.integer
        self.txPower = properties["TxPower"]?.integer
        self.serviceData = Self.byteDictionary(properties["ServiceData"]?.stringKeyed)
        self.manufacturerData = Self.byteDictionary(properties["ManufacturerData"]?.integerKeyed)
        self.uuids = properties["UUIDs"]?.strings ?? []
        self.connected = properties["Connected"]?.bool ?? false
        self.servicesResolved = properties["ServicesResolved"]?.bool ?? false
    }

    /// Applies a PropertiesChanged; returns whether it carried advertisement data (RSSI,
    /// service or manufacturer data, TX power, name).
    mutating func apply(_ changed: [String: DBusValue], invalidated: [String]) -> Bool {
        var advertised = false
        if let value = changed["Name"]?.string { name = value; advertised = true }
        if let value = changed["RSSI"]?.integer { rssi = value; advertised = true }
        if let value = changed["TxPower"]?.integer { txPower = value; advertised = true }
        if let value = changed["ServiceData"]?.stringKeyed { serviceData = Self.byteDictionary(value); advertised = true }
        if let value = changed["ManufacturerData"]?.integerKeyed {
            manufacturerData = Self.byteDictionary(value)
            advertised = true
        }
        if let value = changed["UUIDs"]?.strings { uuids = value }
        if let value = changed["Connected"]?.bool { connected = value }
        if let value = changed["ServicesResolved"]?.bool {
            servicesResolved = value
            // Services are only resolved over a link. BlueZ 5.66 does not always say
            // Connected=true: when the ATT channel is up before the kernel's Device Connected
            // event, it marks the device connected without a signal, then ignores the event
            // as "already connected" (seen in the lab under load).
            if value { connected = true }
        }
        for key in invalidated {
            switch key {
            case "RSSI": rssi = nil
            case "TxPower": txPower = nil
            case "ServiceData": serviceData = [:]
            case "ManufacturerData": manufacturerData = [:]
            default: break
            }
        }
        return advertised
    }

    static func adapterPath(of devicePath: String) -> String {
        var parts = devicePath.split(separator: "/", omittingEmptySubsequences: false)
        if parts.count > 1 { parts.removeLast() }
        return parts.joined(separator: "/")
    }

    private static func byteDictionary<Key: Hashable>(_ values: [Key: DBusValue]?) -> [Key: [UInt8]] {
        guard let values else { return [:] }
        var result: [Key: [UInt8]] = [:]
        for (key, value) in values {
            if let bytes = value.bytes { result[key] = bytes }
        }
        return result
    }
}

/// What the client reports, in the order BlueZ said it.
public enum BlueZEvent: Hashable, Sendable {
    /// bluetoothd is on the bus and its object tree has been read.
    case serviceAppeared
    /// bluetoothd left the bus: every adapter and device is gone with it.
    case serviceVanished
    case adapterAdded(AdapterState)
    case adapterChanged(AdapterState)
    case adapterRemoved(path: String)
    /// A device was seen or advertised again (RSSI, service data, manufacturer data, name).
    case deviceAdvertised(DeviceState)
    /// Connection state of a device changed (`Connected`, `ServicesResolved`).
    case deviceConnectionChanged(DeviceState)
    case deviceRemoved(path: String)
}

/// `SetDiscoveryFilter`'s arguments, as accessd uses them.
public struct DiscoveryFilter: Hashable, Sendable {
    public var transport: String
    /// Report every advertisement with its RSSI, not only changes.
    public var duplicateData: Bool
    /// Service UUIDs to report; empty for all.
    public var uuids: [String]
    /// Only devices with an RSSI at least this strong.
    public var rssi: Int16?

    public init(transport: String = "le", duplicateData: Bool = true, uuids: [String] = [], rssi: Int16? = nil) {
        self.transport = transport
        self.duplicateData = duplicateData
        self.uuids = uuids
        self.rssi = rssi
    }

    var dbusValue: DBusValue {
        var values: [String: DBusValue] = ["Transport": .string(transport), "DuplicateData": .bool(duplicateData)]
        if !uuids.isEmpty { values["UUIDs"] = .strings(uuids) }
        if let rssi { values["RSSI"] = .int16(rssi) }
        return .properties(values)
    }
}
