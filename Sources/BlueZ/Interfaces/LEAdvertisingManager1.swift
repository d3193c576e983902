/// `org.bluez.LEAdvertisingManager1`: where an advertisement is registered on an adapter,
/// and `org.bluez.LEAdvertisement1`, the object that describes it
/// (doc/org.bluez.LEAdvertisingManager.rst, doc/org.bluez.LEAdvertisement.rst).
public enum LEAdvertisingManager1 {
    public static let interface = "org.bluez.LEAdvertisingManager1"
}

public enum LEAdvertisement1 {
    public static let interface = "org.bluez.LEAdvertisement1"
}
