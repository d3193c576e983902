/// The reader's GATT database (docs/reader-protocol.md §4).
public enum ReaderGATT {
    /// The primary service, also listed in the scan response.
    public static let serviceUUID = "6a4e0001-5c8d-4b7a-9f3e-2d1c0b8a7f60"
    /// Control point: the credential side writes fragments (write with response), the
    /// reader answers with notifications.
    public static let controlPointUUID = "6a4e0002-5c8d-4b7a-9f3e-2d1c0b8a7f60"
    /// The default ATT MTU; every implementation must work with it.
    public static let minimumMTU = 23
}
