/// The version of accessd's core, reported by every binary and on the control socket.
public enum AccessCoreVersion {
    public static let string = "0.2.0"
    /// The reader protocol version this build speaks (docs/reader-protocol.md).
    public static let readerProtocolVersion: UInt8 = 1
}
