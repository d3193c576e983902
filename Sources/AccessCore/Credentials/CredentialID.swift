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

    /// UUID form, lower case.
    public var description: String {
        let hex = bytes.hexString
        var text = ""
        for (index, character) in hex.enumerated() {
            if [8, 12, 16, 20].contains(index) { text.append("-") }
            text.append(character)
        }
        return text
    }
}

extension String {
    fileprivate func replacingDashes() -> String { String(filter { $0 != "-" }) }
}
