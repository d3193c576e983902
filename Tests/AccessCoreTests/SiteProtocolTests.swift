import Crypto
import Testing

@testable import AccessCore

/// The pure parts of docs/site-api.md: invitation codes and URLs, request signatures, base64.
@Suite("Site protocol", .timeLimit(.minutes(5)))
struct SiteProtocolTests {
    @Test func invitationCodesAreForgiving() throws {
        let code = try InvitationCode("7kq2-m9xd-4tpa-zc3n")
        #expect(code.canonical == "7KQ2M9XD4TPAZC3N")
        #expect(code.description == "7KQ2-M9XD-4TPA-ZC3N")
        #expect(try InvitationCode(" 7KQ2 M9XD 4TPA ZC3N ") == code)
        for bad in [
            "", "7KQ2M9XD4TPAZC3", "7KQ2M9XD4TPAZC3NN", "IKQ2M9XD4TPAZC3N", "7KQ2M9XD4TPAZC3U", "7KQ2M9XD4TPAZC3Ñ",
            // Found by fuzzing: upper-cased, these are two characters, and forming one trapped.
            "7KQ2M9XD4TPAZC3ß", "\u{FFFD}\u{0345}@1",
        ] {
            #expect(throws: SiteAddressError.malformedCode) { try InvitationCode(bad) }
        }
        var generator = SeededGenerator(seed: 7)
        let fresh = InvitationCode.random(using: &generator)
        #expect(try InvitationCode(fresh.description) == fresh)
    }

    @Test func invitationURLsAndHosts() throws {
        let (site, code) = try SiteAddress.parseInvitation(
            "https://Access.Example.com/mobile/v1/invitations/7KQ2-M9XD-4TPA-ZC3N")
        #expect(site.description == "https://access.example.com/mobile")
        #expect(code.canonical == "7KQ2M9XD4TPAZC3N")
        let (local, _) = try SiteAddress.parseInvitation("http://127.0.0.1:8700/v1/invitations/7KQ2M9XD4TPAZC3N")
        #expect(local.isLoopback)
        #expect(local.port == 8700)
        try local.checkTransport()
        let (v6, _) = try SiteAddress.parseInvitation("http://[::1]:9/v1/invitations/7KQ2M9XD4TPAZC3N")
        #expect(v6.description == "http://[::1]:9")
        try v6.checkTransport()
        // Bare hosts default to https; a scheme is kept.
        #expect(try SiteAddress.parseHost("access.example.com").description == "https://access.example.com")
        #expect(try SiteAddress.parseHost("http://localhost:8700/").description == "http://localhost:8700")
        #expect(throws: SiteAddressError.insecureTransport(host: "192.0.2.1")) {
            try SiteAddress.parseHost("http://192.0.2.1").checkTransport()
        }
        #expect(throws: SiteAddressError.unsupportedScheme("ftp")) { try SiteAddress.parseHost("ftp://x") }
        for bad in [
            "", "https://", "https://a b/v1/invitations/7KQ2M9XD4TPAZC3N",
            "https://user@x/v1/invitations/7KQ2M9XD4TPAZC3N",
            "https://x:99999/v1/invitations/7KQ2M9XD4TPAZC3N", "https://x/v2/invitations/7KQ2M9XD4TPAZC3N",
            "x/v1/invitations/7KQ2M9XD4TPAZC3N", "https://x/v1/invitations/7KQ2M9XD4TPAZC3N/extra",
            "https://[::1/v1/invitations/7KQ2M9XD4TPAZC3N", "https://x//v1/invitations/7KQ2M9XD4TPAZC3N",
        ] {
            #expect(throws: SiteAddressError.self) { try SiteAddress.parseInvitation(bad) }
        }
        // Found by fuzzing: "hy//" made the prefix "/", so every call's path began with "//"
        // and the address printed as text that parsed to another one.
        #expect(throws: SiteAddressError.malformedURL("an empty path segment (//)")) {
            try SiteAddress.parseHost("hy//")
        }
        #expect(try SiteAddress.parseHost("https://x/mobile/").description == "https://x/mobile")
    }

    @Test func requestSignaturesCoverEverything() throws {
        let key = P256.Signing.PrivateKey()
        let id = try #require(CredentialID("4b1f0d3e-9a57-4c1e-8d2b-6f0a9c3e7b21"))
        let nonce = [UInt8](repeating: 0xAB, count: 16)
        let signed = SiteRequestAuthorization.sign(
            method: "GET", pathAndQuery: "/v1/credentials/x/items?cursor=3",
            body: [], time: 1_700_000_000, nonce: nonce, credentialID: id, key: key)
        let parsed = try #require(SiteRequestAuthorization(headerValue: signed.headerValue))
        #expect(parsed == signed)
        #expect(
            parsed.verifies(
                method: "GET", pathAndQuery: "/v1/credentials/x/items?cursor=3", body: [], key: key.publicKey))
        #expect(
            !parsed.verifies(
                method: "DELETE", pathAndQuery: "/v1/credentials/x/items?cursor=3", body: [], key: key.publicKey))
        #expect(
            !parsed.verifies(
                method: "GET", pathAndQuery: "/v1/credentials/x/items?cursor=0", body: [], key: key.publicKey))
        #expect(
            !parsed.verifies(
                method: "GET", pathAndQuery: "/v1/credentials/x/items?cursor=3", body: [1], key: key.publicKey))
        #expect(
            !parsed.verifies(
                method: "GET", pathAndQuery: "/v1/credentials/x/items?cursor=3", body: [],
                key: P256.Signing.PrivateKey().publicKey))
        var later = parsed
        later.time += 1
        #expect(
            !later.verifies(
                method: "GET", pathAndQuery: "/v1/credentials/x/items?cursor=3", body: [], key: key.publicKey))
        for bad in [
            "", "Bearer x", "ACR1 credential=\(id)", signed.headerValue + ", extra=1",
            signed.headerValue.replacingOccurrences(of: "time=", with: "time=x"),
        ] {
            #expect(SiteRequestAuthorization(headerValue: bad) == nil)
        }
    }

    @Test func base64RoundTripsAndIsStrict() {
        var generator = SeededGenerator(seed: 64)
        for length in 0..<70 {
            let bytes = generator.bytes(length)
            #expect(Base64.decode(Base64.encode(bytes)) == bytes)
        }
        #expect(Base64.encode(Array("foobar".utf8)) == "Zm9vYmFy")
        #expect(Base64.encode(Array("fo".utf8)) == "Zm8=")
        for bad in ["Zm9", "Zm9v!", "Zg==Zg==", "Zh==", "Zm9=", "====", "Z==="] {
            #expect(Base64.decode(bad) == nil, "\(bad)")
        }
    }

    /// Random and mutated text: every parser answers with a value or a typed error.
    @Test func survivesFuzzedInput() {
        var generator = SeededGenerator(seed: 0x517E)
        let seeds = [
            "http://127.0.0.1:8700/v1/invitations/7KQ2M9XD4TPAZC3N",
            "ACR1 credential=4b1f0d3e-9a57-4c1e-8d2b-6f0a9c3e7b21, time=1, nonce=\(String(repeating: "ab", count: 16)), signature=\(Base64.encode(Array(repeating: 1, count: 64)))",
            "Zm9vYmFy",
        ]
        let alphabet = Array("ab:/[]@?#%=.,- 0189AZz\u{0}\u{7F}é=+")
        for round in 0..<20_000 {
            var text = Array(seeds[round % seeds.count])
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let index = Int.random(in: 0..<text.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: text[index] = alphabet.randomElement(using: &generator) ?? "x"
                case 1: text.remove(at: index)
                default: text.insert(alphabet.randomElement(using: &generator) ?? "x", at: index)
                }
                if text.isEmpty { text = ["x"] }
            }
            let candidate = String(text)
            _ = try? SiteAddress.parseInvitation(candidate)
            _ = try? SiteAddress.parseHost(candidate)
            _ = try? InvitationCode(candidate)
            _ = SiteRequestAuthorization(headerValue: candidate)
            _ = Base64.decode(candidate)
        }
    }
}
