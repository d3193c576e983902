import Crypto
import Foundation
import Testing

@testable import AccessCore

/// The fingerprint of a credential's key (docs/site-api.md §3.1), against the document's own
/// test vector, so the form a site implements from the text is the one accessd shows.
@Suite("Key fingerprints", .timeLimit(.minutes(5)))
struct KeyFingerprintTests {
    @Test func theDocumentsVectorHolds() throws {
        let url = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/site-api.md")
        let text = try String(contentsOf: url, encoding: .utf8)
        let section = try #require(text.components(separatedBy: "### 3.1 Key fingerprints").dropFirst().first)
        let vector = try #require(section.components(separatedBy: "Test vector").dropFirst().first)
        // The backticked values after "Test vector": the key's name, the key, the fingerprint.
        let quoted = vector.components(separatedBy: "`").enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        try #require(quoted.count >= 3, "\(quoted)")
        let key = try P256.Signing.PublicKey(x963Representation: try #require(Base64.decode(quoted[1])))
        #expect(KeyFingerprint.of(key) == quoted[2])
    }

    @Test func itIsTheFormCurlPins() {
        let fingerprint = KeyFingerprint.of(P256.Signing.PrivateKey().publicKey)
        #expect(fingerprint.hasPrefix("sha256//") && fingerprint.count == 8 + 44)
    }
}
