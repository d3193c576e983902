import CBlueZ

/// A Bluetooth device address, as BlueZ shows it on D-Bus (`Address` of `org.bluez.Device1`).
public struct BluetoothAddress: Hashable, Sendable, CustomStringConvertible {
    /// The six bytes in display order: `bytes.0` is the leftmost pair of "AA:BB:CC:DD:EE:FF".
    public let bytes: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)

    public init(bytes: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)) {
        self.bytes = bytes
    }

    /// Parses "AA:BB:CC:DD:EE:FF" (either case). Returns nil for anything else.
    public init?(_ text: String) {
        var raw = cbz_address()
        guard cbz_address_parse(text, &raw) == 0 else { return nil }
        self.bytes = raw.bytes
    }

    /// Upper-case "AA:BB:CC:DD:EE:FF", as BlueZ writes addresses.
    public var description: String {
        var raw = cbz_address(bytes: bytes)
        var buffer = [CChar](repeating: 0, count: 18)
        buffer.withUnsafeMutableBufferPointer { cbz_address_format(&raw, $0.baseAddress) }
        return String(decoding: buffer.prefix(17).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public static func == (lhs: BluetoothAddress, rhs: BluetoothAddress) -> Bool {
        lhs.bytes == rhs.bytes
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(bytes.0)
        hasher.combine(bytes.1)
        hasher.combine(bytes.2)
        hasher.combine(bytes.3)
        hasher.combine(bytes.4)
        hasher.combine(bytes.5)
    }
}

/// The libdbus-1 this process runs with, for diagnostics.
public enum LibDBus {
    public static var version: String {
        var major: Int32 = 0
        var minor: Int32 = 0
        var micro: Int32 = 0
        cbz_dbus_version(&major, &minor, &micro)
        return "\(major).\(minor).\(micro)"
    }
}
