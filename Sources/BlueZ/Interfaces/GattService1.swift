/// `org.bluez.GattService1`: a remote GATT service (doc/org.bluez.GattService.rst).
public enum GattService1 {
    public static let interface = "org.bluez.GattService1"
}

/// A remote GATT service (`org.bluez.GattService1`) in BlueZ's tree.
public struct GattServiceState: Hashable, Sendable {
    public var path: String
    public var uuid: String
    public var devicePath: String

    public init(path: String, properties: [String: DBusValue]) {
        self.path = path
        self.uuid = (properties["UUID"]?.string ?? "").lowercased()
        self.devicePath = properties["Device"]?.string ?? DeviceState.adapterPath(of: path)
    }
}
