/// A credential's 16-byte identifier, issued by the site.
public struct CredentialID: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// Nil unless exactly 16 bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Parses 32 hex digits, with or without UUID dashes.
    public init?(_ text: String) {
        guard let bytes = [UInt8](hexString: text.replacingDashes()), bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// UUID form, lower case. Built as bytes: rendered once per item in `items.list`, the
    /// character-by-character version was a third of listing 10,000 items.
    public var description: String {
        func digit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 0x30 + nibble : 0x57 + nibble }
        var ascii: [UInt8] = []
        ascii.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { ascii.append(UInt8(ascii: "-")) }
            ascii.append(digit(byte >> 4))
            ascii.append(digit(byte & 0x0F))
        }
        return String(decoding: ascii, as: UTF8.self)
    }
}

extension String {
    fileprivate func replacingDashes() -> String { String(filter { $0 != "-" }) }
}
