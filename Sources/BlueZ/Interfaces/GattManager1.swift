/// `org.bluez.GattManager1`: where a GATT server (readersim's reader) registers its
/// application on an adapter (doc/org.bluez.GattManager.rst).
public enum GattManager1 {
    public static let interface = "org.bluez.GattManager1"
}
