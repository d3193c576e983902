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

    /// Issue #36: after a response that crossed a refresh, which nonce do the second-factor
    /// challenge and the action list sign? The one the response answered, as the decision
    /// does: exactly the version 1 vectors `secondFactorChallenge` and `actionList`.
    @Test func afterACrossedRefreshEveryReaderMessageSignsTheAnsweredNonce() throws {
        let sitePublic = try P256.Signing.PublicKey(x963Representation: vector("site.publicKey"))
        func exchange(_ configuration: ReaderSession.Configuration, response: String) throws -> ProtocolMessage {
            var reader = ReaderSession(configuration: configuration, mtu: 185)
            _ = reader.handle(
                .connected(
                    nonce: ExchangeHarness.nonce, secondFactorNonce: ExchangeHarness.secondNonce, standing: true))
            _ = reader.handle(.timerFired)
            _ = reader.handle(.freshNonce(try vector("standing.refreshNonce")))
            var answer: [UInt8]?
            for fragment in Fragmentation.fragments(of: try vector(response), mtu: 185) {
                for case .send(let fragments) in reader.handle(.fragmentReceived(fragment)) {
                    var reassembler = FrameReassembler()
                    for piece in fragments { answer = try reassembler.feed(piece) ?? answer }
                }
            }
            return try ProtocolMessage(decoding: try #require(answer))
        }
        let second = try exchange(
            ExchangeHarness.readerConfiguration(secondFactorRequired: true), response: "response.message")
        guard case .secondFactorChallenge(let challenge) = second else {
            Issue.record("no second-factor challenge: \(second)")
            return
        }
        #expect(challenge.nonce == (try vector("secondFactorChallenge.nonce")))
        #expect(
            ProtocolCrypto.verify(
                challenge.signature, over: try vector("secondFactorChallenge.signedContent"), with: sitePublic))
        let listed = try exchange(
            ExchangeHarness.readerConfiguration(
                actions: [ReaderAction(id: 1, name: "Open"), ReaderAction(id: 2, name: "Lockdown")]),
            response: "enumerate.message")
        guard case .actionList(let list) = listed else {
            Issue.record("no action list: \(listed)")
            return
        }
        #expect(list.actionsBody == Array(try vector("actionList.signedContent").suffix(list.actionsBody.count)))
        #expect(ProtocolCrypto.verify(list.signature, over: try vector("actionList.signedContent"), with: sitePublic))
    }

    /// Issue #36: the action list's rules, on `actionList.message` edited: a list of 0 is a
    /// list; a name is at most 32 bytes of UTF-8 (not characters); an id named twice is malformed.
    @Test func anActionListsNamesAreBytesAndItsIdsDistinct() throws {
        let message = try vector("actionList.message")
        let signature = Array(message.suffix(64))
        #expect(
            try ProtocolMessage(decoding: [0x06, 0x00] + signature)
                == .actionList(.init(actions: [], signature: signature)))
        func list(_ entries: [(Int8, [UInt8])]) -> [UInt8] {
            [0x06, UInt8(entries.count)] + entries.flatMap { [UInt8(bitPattern: $0.0), UInt8($0.1.count)] + $0.1 }
                + signature
        }
        // 16 × "é" is 32 bytes and 16 characters: taken; 33 bytes are not.
        let thirtyTwo = Array(String(repeating: "é", count: 16).utf8)
        #expect((try? ProtocolMessage(decoding: list([(1, thirtyTwo)]))) != nil)
        #expect(throws: ProtocolError.invalidField("actionName")) {
            try ProtocolMessage(decoding: list([(1, thirtyTwo + [0x41])]))
        }
        #expect(throws: ProtocolError.invalidField("actionName")) {
            try ProtocolMessage(decoding: list([(1, [0xC3])]))
        }
        #expect(throws: ProtocolError.invalidField("actionID")) {
            try ProtocolMessage(decoding: list([(1, Array("Open".utf8)), (1, Array("Lock".utf8))]))
        }
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
