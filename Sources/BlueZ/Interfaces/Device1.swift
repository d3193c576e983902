/// `org.bluez.Device1`: a remote device, what it advertised and its link (doc/org.bluez.Device.rst).
public enum Device1 {
    public static let interface = "org.bluez.Device1"
}

/// A device as BlueZ describes it (`org.bluez.Device1`), with what its last advertisement said.
public struct DeviceState: Hashable, Sendable {
    /// `/org/bluez/hci0/dev_00_BB_01_00_00_00`
    public var path: String
    public var adapterPath: String
    public var address: BluetoothAddress?
    /// `Name` as BlueZ has it now: what the device advertised, or the GAP Device Name
    /// bluetoothd read over a link (its gap profile), or what its cache kept of either.
    public var name: String?
    /// The name the device advertised: `Name` when it arrived with an advertisement (in the
    /// same signal as RSSI, TX power, service or manufacturer data: bluetoothd sets all it
    /// found in one advertisement and sends them as one PropertiesChanged). The GAP name read
    /// on connecting comes alone and is not taken: a reader running on BlueZ would be renamed
    /// after its stack ("BlueZ 5.66") for as long as the link lasts. Nil until heard so.
    public var advertisedName: String?
    /// The name to show for the device: the advertised one, else whatever BlueZ has.
    public var preferredName: String? { advertisedName ?? name }
    public var rssi: Int?
    public var txPower: Int?
    /// Keyed by the 128-bit UUID string BlueZ uses.
    public var serviceData: [String: [UInt8]]
    /// Keyed by company id.
    public var manufacturerData: [Int: [UInt8]]
    public var uuids: [String]
    public var connected: Bool
    public var servicesResolved: Bool
    /// Advertisement reports BlueZ sent for this device since it appeared: signals that carried
    /// service or manufacturer data, which BlueZ re-sends for every advertisement under
    /// `DuplicateData` (an RSSI alone is not one: it is sent only when it changed). A
    /// consumer that takes merged reports (`CoalescingQueue`) still counts each one. Starts
    /// again at 1 when the device is added again.
    public var advertisementReports: UInt64 = 0

    public init(path: String, properties: [String: DBusValue]) {
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
        if self.rssi != nil {
            advertisementReports = 1
            advertisedName = name
        }
    }

    /// Applies a PropertiesChanged; returns whether it carried advertisement data (RSSI,
    /// service or manufacturer data, TX power, name).
    mutating func apply(_ changed: [String: DBusValue], invalidated: [String]) -> Bool {
        var advertised = false
        if changed["ServiceData"] != nil || changed["ManufacturerData"] != nil {
            advertisementReports &+= 1
        }
        if let value = changed["Name"]?.string {
            name = value
            advertised = true
            let heardAdvertising = ["RSSI", "TxPower", "ServiceData", "ManufacturerData"].contains {
                changed[$0] != nil
            }
            if heardAdvertising { advertisedName = value }
        }
        if let value = changed["RSSI"]?.integer {
            rssi = value
            advertised = true
        }
        if let value = changed["TxPower"]?.integer {
            txPower = value
            advertised = true
        }
        if let value = changed["ServiceData"]?.stringKeyed {
            serviceData = Self.byteDictionary(value)
            advertised = true
        }
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

extension BlueZClient {
    public nonisolated func connect(device: String, timeout: Duration = .seconds(10)) async throws(BlueZError) {
        _ = try await call(device, Device1.interface, "Connect", timeout: timeout)
    }

    public nonisolated func disconnect(device: String, timeout: Duration = .seconds(5)) async throws(BlueZError) {
        _ = try await call(device, Device1.interface, "Disconnect", timeout: timeout)
    }
}
