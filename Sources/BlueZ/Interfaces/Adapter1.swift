/// `org.bluez.Adapter1`: a local controller, its power and discovery (BlueZ's doc/org.bluez.Adapter.rst).
public enum Adapter1 {
    public static let interface = "org.bluez.Adapter1"
}

/// An adapter as BlueZ describes it (`org.bluez.Adapter1`).
public struct AdapterState: Hashable, Sendable {
    /// `/org/bluez/hci0`
    public var path: String
    public var address: BluetoothAddress?
    public var powered: Bool
    public var discovering: Bool
    /// `PowerState` (BlueZ ≥ 5.66): "on", "off", "off-blocked" (rfkill), "off-enabling", "on-disabling".
    public var powerState: String?
    /// `Roles` (BlueZ ≥ 5.48): the LE roles it supports ("central", "peripheral",
    /// "central-peripheral"); empty for a BR/EDR-only controller, nil when not said.
    public var roles: [String]?

    /// `hci0`
    public var name: String { String(path.split(separator: "/").last ?? "") }
    /// Powered off because rfkill blocks it.
    public var isBlocked: Bool { powerState == "off-blocked" }

    public init(path: String, properties: [String: DBusValue]) {
        self.path = path
        self.address = properties["Address"]?.string.flatMap(BluetoothAddress.init)
        self.powered = properties["Powered"]?.bool ?? false
        self.discovering = properties["Discovering"]?.bool ?? false
        self.powerState = properties["PowerState"]?.string
        self.roles = properties["Roles"]?.strings
    }

    mutating func apply(_ changed: [String: DBusValue]) {
        if let value = changed["Address"]?.string { address = BluetoothAddress(value) }
        if let value = changed["Powered"]?.bool { powered = value }
        if let value = changed["Discovering"]?.bool { discovering = value }
        if let value = changed["PowerState"]?.string { powerState = value }
        if let value = changed["Roles"]?.strings { roles = value }
    }
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

extension BlueZClient {
    public nonisolated func setDiscoveryFilter(adapter: String, _ filter: DiscoveryFilter) async throws(BlueZError) {
        _ = try await call(adapter, Adapter1.interface, "SetDiscoveryFilter", [filter.dbusValue])
    }

    public nonisolated func startDiscovery(adapter: String) async throws(BlueZError) {
        _ = try await call(adapter, Adapter1.interface, "StartDiscovery")
    }

    public nonisolated func stopDiscovery(adapter: String) async throws(BlueZError) {
        _ = try await call(adapter, Adapter1.interface, "StopDiscovery")
    }

    public nonisolated func setPowered(adapter: String, _ powered: Bool) async throws(BlueZError) {
        _ = try await call(
            adapter, DBusProperties.interface, "Set",
            [.string(Adapter1.interface), .string("Powered"), .variant(.bool(powered))])
    }
}
