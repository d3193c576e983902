import AccessCore
import Crypto

// The checks both ends make on the text fields, so that accessd and readersim agree on
// what a well-formed key, tag or lock credential is.

public enum SiteText {
    /// A base64 X9.63 P-256 public key (65 bytes), or nil.
    public static func publicKey(_ base64: String) -> P256.Signing.PublicKey? {
        guard let bytes = Base64.decode(base64), bytes.count == 65 else { return nil }
        return try? P256.Signing.PublicKey(x963Representation: bytes)
    }

    public static func base64(_ key: P256.Signing.PublicKey) -> String {
        Base64.encode(Array(key.x963Representation))
    }

    /// Up to 8 hex digits (the site sends 8), or nil.
    public static func siteTag(_ text: String) -> SiteTag? {
        guard !text.isEmpty, text.utf8.count <= 8, let value = UInt32(text, radix: 16) else { return nil }
        return SiteTag(value)
    }
}

extension AperioFields {
    /// The lock credential, when `identifier` is 8 bytes of hex and `key` 32 bytes of base64.
    public var secret: AperioSecret? {
        guard let identifierBytes, let keyBytes else { return nil }
        return AperioSecret(identifier: identifierBytes, key: keyBytes)
    }

    public var keyBytes: [UInt8]? { Base64.decode(key).flatMap { $0.count == 32 ? $0 : nil } }
    public var identifierBytes: [UInt8]? { [UInt8](hexString: identifier).flatMap { $0.count == 8 ? $0 : nil } }
}
