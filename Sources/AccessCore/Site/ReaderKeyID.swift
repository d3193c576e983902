import Crypto

/// Names a reader controller's key at the site (docs/site-api.md §7): the first 16 bytes of
/// SHA-256 over the X9.63 public key, as 32 lower-case hex digits. Derived, not assigned, so
/// a reader and its site agree on it without a registration round trip, like an SSH key's
/// fingerprint.
public struct ReaderKeyID: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init(publicKey: P256.Signing.PublicKey) {
        bytes = Array(Array(SHA256.hash(data: publicKey.x963Representation)).prefix(16))
    }

    /// Parses 32 hex digits (either case).
    public init?(_ text: some StringProtocol) {
        guard text.utf8.count == 32, let bytes = [UInt8](hexString: String(text).lowercased()), bytes.count == 16
        else { return nil }
        self.bytes = bytes
    }

    public var description: String { bytes.hexString }
}
