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
        var ascii: [UInt8] = []
        ascii.reserveCapacity(36)
        for (index, digit) in bytes.hexString.utf8.enumerated() {
            if index == 8 || index == 12 || index == 16 || index == 20 { ascii.append(UInt8(ascii: "-")) }
            ascii.append(digit)
        }
        return String(decoding: ascii, as: UTF8.self)
    }
}

extension String {
    fileprivate func replacingDashes() -> String { String(filter { $0 != "-" }) }
}
