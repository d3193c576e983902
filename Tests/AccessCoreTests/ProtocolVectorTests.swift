import Crypto
import Foundation
import Testing

@testable import AccessCore

/// Checks docs/reader-protocol.md §9 against the implementation, line by line, so the
/// document an outside team builds from cannot drift from the code.
@Suite("Protocol test vectors", .timeLimit(.minutes(5)))
struct ProtocolVectorTests {
    let vectors: [String: [UInt8]]

    init() throws {
        let url = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/reader-protocol.md")
        let text = try String(contentsOf: url, encoding: .utf8)
        let block = try #require(
            text.components(separatedBy: "```vectors\n").dropFirst().first?
                .components(separatedBy: "```").first)
        var vectors: [String: [UInt8]] = [:]
        for line in block.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            try #require(parts.count == 2, "bad vector line \(line)")
            guard let bytes = hexBytes(parts[1]) else {
                Issue.record("bad hex in \(line)")
                continue
            }
            vectors[parts[0]] = bytes
        }
        self.vectors = vectors
    }

    func vector(_ name: String) throws -> [UInt8] {
        try #require(vectors[name], "missing vector \(name)")
    }

    @Test func keysMatch() throws {
        for (name, key) in [
            ("site", Fixtures.siteKey), ("credential", Fixtures.credentialKey),
            ("secondFactor", Fixtures.secondFactorKey),
        ] {
            #expect(try vector("\(name).privateKey") == Array(key.rawRepresentation))
            #expect(try vector("\(name).publicKey") == Array(key.publicKey.x963Representation))
        }
    }

    @Test func advertisementMatches() throws {
        let advertisement = Fixtures.advertisement()
        #expect(try vector("advertisement.serviceData") == advertisement.serviceData)
        #expect(try vector("advertisement.legacyAdvertisingData") == advertisement.legacyAdvertisingData)
        #expect(
            try ReaderAdvertisement(advertisingData: vector("advertisement.legacyAdvertisingData")) == advertisement)
    }

    @Test func challengeMatchesAndVerifies() throws {
        let content = SignedContent.challenge(
            readerID: Fixtures.readerID, siteTag: Fixtures.siteTag,
            nonce: ExchangeHarness.nonce)
        #expect(try vector("challenge.signedContent") == content)
        let signature = try vector("challenge.signature")
        let sitePublic = try P256.Signing.PublicKey(x963Representation: vector("site.publicKey"))
        #expect(ProtocolCrypto.verify(signature, over: content, with: sitePublic))
        let message = try vector("challenge.message")
        #expect(
            try ProtocolMessage(decoding: message)
                == .challenge(
                    .init(
                        readerID: Fixtures.readerID, siteTag: Fixtures.siteTag, nonce: ExchangeHarness.nonce,
                        signature: signature)))
        let fragments = Fragmentation.fragments(of: message, mtu: 23)
        #expect(fragments.count == 5)
        for (index, fragment) in fragments.enumerated() {
            #expect(try vector("challenge.fragment\(index)") == fragment)
        }
    }

    @Test func responseMatchesAndVerifies() throws {
        let content = SignedContent.response(
            nonce: ExchangeHarness.nonce, readerID: Fixtures.readerID,
            credentialID: Fixtures.credentialID, operation: .access)
        #expect(try vector("response.signedContent") == content)
        let credentialPublic = try P256.Signing.PublicKey(x963Representation: vector("credential.publicKey"))
        #expect(ProtocolCrypto.verify(try vector("response.signature"), over: content, with: credentialPublic))
        #expect(
            try ProtocolMessage(decoding: vector("response.message"))
                == .response(
                    .init(
                        credentialID: Fixtures.credentialID, operation: .access, signature: vector("response.signature")
                    )))
    }

    @Test func decisionMatchesAndVerifies() throws {
        let result = AccessResult(decision: .granted, mode: .access)
        let content = SignedContent.decision(
            nonce: ExchangeHarness.nonce, readerID: Fixtures.readerID,
            credential: Fixtures.credentialID.bytes, result: result, actionID: nil)
        #expect(try vector("decision.signedContent") == content)
        #expect(
            ProtocolCrypto.verify(try vector("decision.signature"), over: content, with: Fixtures.siteKey.publicKey))
        #expect(
            try ProtocolMessage(decoding: vector("decision.message"))
                == .decision(
                    .init(
                        result: result, actionID: nil, signature: vector("decision.signature"))))
    }

    /// A signed content exact, its signature verifying with `key`, and the message decoding
    /// to `expected` (issue #14: a denial, a second factor and actions, beyond a grant).
    private func check(
        _ name: String, content: [UInt8], key: P256.Signing.PublicKey,
        _ expected: ([UInt8]) -> ProtocolMessage
    ) throws {
        #expect(try vector("\(name).signedContent") == content, "\(name).signedContent")
        let signature = try vector("\(name).signature")
        #expect(ProtocolCrypto.verify(signature, over: content, with: key), "\(name).signature")
        let message = try vector("\(name).message")
        #expect(try ProtocolMessage(decoding: message) == expected(signature), "\(name).message")
        #expect(expected(signature).encoded == message, "\(name).message re-encoded")
    }

    @Test func aDenialMatchesAndVerifies() throws {
        let denied = AccessResult(decision: .deniedLockdown, mode: .access)
        try check(
            "decisionDenied",
            content: SignedContent.decision(
                nonce: ExchangeHarness.nonce, readerID: Fixtures.readerID, credential: Fixtures.credentialID.bytes,
                result: denied, actionID: nil), key: Fixtures.siteKey.publicKey
        ) {
            .decision(.init(result: denied, actionID: nil, signature: $0))
        }
    }

    @Test func aSecondFactorExchangeMatchesAndVerifies() throws {
        let secondNonce = try vector("secondFactorChallenge.nonce")
        #expect(secondNonce == Array(0x20...0x2F))
        try check(
            "secondFactorChallenge",
            content: SignedContent.secondFactorChallenge(
                nonce: ExchangeHarness.nonce, secondNonce: secondNonce, readerID: Fixtures.readerID,
                credentialID: Fixtures.credentialID), key: Fixtures.siteKey.publicKey
        ) {
            .secondFactorChallenge(.init(nonce: secondNonce, signature: $0))
        }
        try check(
            "secondFactorResponse",
            content: SignedContent.secondFactorResponse(
                secondNonce: secondNonce, readerID: Fixtures.readerID, credentialID: Fixtures.credentialID),
            key: Fixtures.secondFactorKey.publicKey
        ) { .secondFactorResponse(signature: $0) }
    }

    @Test func anActionExchangeMatchesAndVerifies() throws {
        for (name, operation) in [("enumerate", ExchangeOperation.enumerateActions), ("perform", .performAction(2))] {
            try check(
                name,
                content: SignedContent.response(
                    nonce: ExchangeHarness.nonce, readerID: Fixtures.readerID, credentialID: Fixtures.credentialID,
                    operation: operation), key: Fixtures.credentialKey.publicKey
            ) {
                .response(.init(credentialID: Fixtures.credentialID, operation: operation, signature: $0))
            }
        }
        let actions = [ReaderAction(id: 1, name: "Open"), ReaderAction(id: 2, name: "Lockdown")]
        try check(
            "actionList",
            content: SignedContent.actionList(
                nonce: ExchangeHarness.nonce, readerID: Fixtures.readerID, credentialID: Fixtures.credentialID,
                body: ProtocolMessage.ActionList(actions: actions, signature: []).actionsBody),
            key: Fixtures.siteKey.publicKey
        ) {
            .actionList(.init(actions: actions, signature: $0))
        }
        let denied = AccessResult(decision: .deniedLockdown, mode: .access)
        try check(
            "performDecision",
            content: SignedContent.decision(
                nonce: ExchangeHarness.nonce, readerID: Fixtures.readerID, credential: Fixtures.credentialID.bytes,
                result: denied, actionID: 2), key: Fixtures.siteKey.publicKey
        ) {
            .decision(.init(result: denied, actionID: 2, signature: $0))
        }
    }

    /// Version 2 (§6, standing challenges): the hold point's value, a refreshed challenge
    /// signed by a second implementation, and a response to the challenge before the refresh,
    /// which the reader must still decide.
    @Test func aStandingExchangeMatchesAndVerifies() throws {
        #expect(try vector("holdPoint.value") == [ReaderGATT.standingVersion])
        let refreshNonce = try vector("standing.refreshNonce")
        let content = SignedContent.challenge(
            readerID: Fixtures.readerID, siteTag: Fixtures.siteTag, nonce: refreshNonce)
        #expect(try vector("standing.refreshSignedContent") == content)
        let sitePublic = try P256.Signing.PublicKey(x963Representation: vector("site.publicKey"))
        let signature = try vector("standing.refreshSignature")
        #expect(ProtocolCrypto.verify(signature, over: content, with: sitePublic))
        let message = try vector("standing.refreshMessage")
        #expect(
            try ProtocolMessage(decoding: message)
                == .challenge(
                    .init(
                        readerID: Fixtures.readerID, siteTag: Fixtures.siteTag, nonce: refreshNonce,
                        signature: signature)))
        #expect(Fragmentation.fragments(of: message, mtu: 185) == [try vector("standing.refreshFragmentAtMTU185")])

        var reader = ReaderSession(configuration: ExchangeHarness.readerConfiguration(), mtu: 185)
        _ = reader.handle(
            .connected(
                nonce: ExchangeHarness.nonce, secondFactorNonce: ExchangeHarness.secondNonce,
                standing: true))
        #expect(reader.handle(.timerFired).contains { if case .refreshChallenge = $0 { true } else { false } })
        _ = reader.handle(.freshNonce(refreshNonce))
        var decision: [UInt8]?
        for fragment in Fragmentation.fragments(of: try vector("response.message"), mtu: 185) {
            for case .send(let fragments) in reader.handle(.fragmentReceived(fragment)) {
                var reassembler = FrameReassembler()
                for piece in fragments { decision = try reassembler.feed(piece) ?? decision }
            }
        }
        guard case .decision(let decided) = try ProtocolMessage(decoding: try #require(decision)) else {
            Issue.record("no decision")
            return
        }
        #expect(decided.result.decision == .granted)
        #expect(ProtocolCrypto.verify(decided.signature, over: try vector("decision.signedContent"), with: sitePublic))
    }

    @Test func aperioMACIsExact() throws {
        let content = SignedContent.aperio(
            nonce: ExchangeHarness.nonce, readerID: Fixtures.readerID,
            aperioID: Fixtures.aperio.identifier)
        #expect(try vector("aperio.signedContent") == content)
        let key = SymmetricKey(data: try vector("aperio.key"))
        #expect(try vector("aperio.mac") == ProtocolCrypto.mac(content, key: key))
    }

    @Test func sealedKeyIsExactAndOpensWithThePIN() throws {
        let sealed = try SealedSecondFactorKey.seal(
            Fixtures.secondFactorKey, pin: "482916", credential: Fixtures.credentialID,
            parameters: .init(log2N: 10, r: 8, p: 1), salt: Array(0x00...0x0F), nonce: Array(0xA0...0xAB))
        #expect(try vector("sealed.encoded") == sealed.encoded)
        let opened = try SealedSecondFactorKey(encoded: vector("sealed.encoded"))
            .unseal(pin: "482916", credential: Fixtures.credentialID)
        #expect(Array(opened.rawRepresentation) == (try vector("secondFactor.privateKey")))
    }
}
