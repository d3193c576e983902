/// A Bluetooth device address as BlueZ reports it ("AA:BB:CC:DD:EE:FF"), kept as a
/// 48-bit integer so that the registry compares and stores it without allocating.
public struct DeviceAddress: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue & 0xFFFF_FFFF_FFFF }

    /// Parses "AA:BB:CC:DD:EE:FF" (either case); nil for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6 else { return nil }
        var value: UInt64 = 0
        for part in parts {
            guard part.count == 2, let byte = UInt8(part, radix: 16) else { return nil }
            value = value << 8 | UInt64(byte)
        }
        self.rawValue = value
    }

    public var description: String {
        let digits: [Character] = Array("0123456789ABCDEF")
        var text = ""
        for shift in stride(from: 40, through: 0, by: -8) {
            let byte = Int((rawValue >> UInt64(shift)) & 0xFF)
            if shift != 40 { text.append(":") }
            text.append(digits[byte >> 4])
            text.append(digits[byte & 0xF])
        }
        return text
    }
}
