import Crypto

/// A public key's fingerprint as accessd shows it and a site can compute from the key it
/// holds: `sha256//` and the base64 of the SHA-256 of the key's SubjectPublicKeyInfo (DER).
/// It is the form curl's `--pinnedpubkey` takes, so a credential's fingerprint and a site's
/// pin read alike (docs/site-api.md, "Key fingerprints").
public enum KeyFingerprint {
    public static func of(_ key: P256.Signing.PublicKey) -> String {
        "sha256//" + Base64.encode(Array(SHA256.hash(data: key.derRepresentation)))
    }
}
