import AccessCore
import Crypto

/// The fixed keys and ids of docs/reader-protocol.md §9, so that a seed built from the test
/// vectors gets a session all the way to a decision and the fuzzer can mutate from there.
enum FuzzKeys {
    static let readerID = ReaderID(0x0000_2A01)
    static let siteTag = SiteTag(0x5117_E001)
    static let credentialID = CredentialID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")!
    static let site = key("c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721")
    static let credential = key("519b423d715f8b581f4fa8ee59f4771a5b44c8130b4e3eacca54a56dda72b464")
    static let secondFactor = key("a8ea150cb80125d7381c4c1f1da8e9de2711f9917060406a73d7904519e51388")
    static let aperio = AperioSecret(
        identifier: [0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7],
        key: Array(0x00...0x1F))!
    static let nonce: [UInt8] = Array(0x10...0x1F)
    static let secondFactorNonce: [UInt8] = Array(0x20...0x2F)

    private static func key(_ hex: String) -> P256.Signing.PrivateKey {
        try! P256.Signing.PrivateKey(rawRepresentation: [UInt8](hexString: hex)!)
    }
}
