/// A remote GATT service (`org.bluez.GattService1`) in BlueZ's tree.
public struct GattServiceState: Hashable, Sendable {
    public var path: String
    public var uuid: String
    public var devicePath: String

    init(path: String, properties: [String: DBusValue]) {
        self.path = path
        self.uuid = (properties["UUID"]?.string ?? "").lowercased()
        self.devicePath = properties["Device"]?.string ?? DeviceState.adapterPath(of: path)
    }
}

/// A remote GATT characteristic (`org.bluez.GattCharacteristic1`) in BlueZ's tree.
public struct GattCharacteristicState: Hashable, Sendable {
    public var path: String
    public var uuid: String
    public var servicePath: String
    /// "read", "write", "write-without-response", "notify", ...
    public var flags: [String]
    public var notifying: Bool
    /// The ATT MTU BlueZ negotiated for this characteristic's link (BlueZ ≥ 5.62).
    public var mtu: Int?

    init(path: String, properties: [String: DBusValue]) {
        self.path = path
        self.uuid = (properties["UUID"]?.string ?? "").lowercased()
        self.servicePath = properties["Service"]?.string ?? DeviceState.adapterPath(of: path)
        self.flags = properties["Flags"]?.strings ?? []
        self.notifying = properties["Notifying"]?.bool ?? false
        self.mtu = properties["MTU"]?.integer
    }

    mutating func apply(_ changed: [String: DBusValue]) {
        if let value = changed["Notifying"]?.bool { notifying = value }
        if let value = changed["MTU"]?.integer { mtu = value }
        if let value = changed["Flags"]?.strings { flags = value }
    }
}

/// How a value is written to a characteristic.
public enum GattWriteType: String, Sendable {
    /// ATT Write Request: the reader acknowledges each write.
    case withResponse = "request"
    /// ATT Write Command: no acknowledgement, lower latency.
    case withoutResponse = "command"
}
