/// The bus daemon itself (`org.freedesktop.DBus`): name owners and match rules.
public enum DBusDaemon {
    public static let service = "org.freedesktop.DBus"
    public static let path = "/org/freedesktop/DBus"
    public static let interface = "org.freedesktop.DBus"
}

/// `org.freedesktop.DBus.ObjectManager`: bluetoothd's object tree (GetManagedObjects,
/// InterfacesAdded, InterfacesRemoved).
public enum DBusObjectManager {
    public static let interface = "org.freedesktop.DBus.ObjectManager"
}

/// `org.freedesktop.DBus.Properties`: Get, Set, GetAll and PropertiesChanged.
public enum DBusProperties {
    public static let interface = "org.freedesktop.DBus.Properties"
}
