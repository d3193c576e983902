import Crypto
import Testing

@testable import AccessCore

/// Version 3 exchanges in memory (docs/reader-protocol.md §1.1): a reader that signs with its
/// controller's own key and sends the site's certificate for it, against a holder that
/// checks the certificate; and each certificate a holder must refuse.
@Suite("Certified exchanges (version 3)")
struct CertifiedExchangeTests {
    static let now = Double(ControllerCertificateTests.validFrom) + 3_600
    static let granted = AccessResult(decision: .granted, mode: .access)
    static let controllerKey = ControllerCertificateTests.controllerKey

    static func identity(
        readers: [ReaderID] = [Fixtures.readerID], validUntil: UInt32 = ControllerCertificateTests.validFrom + 86_400,
        signedBy siteKey: P256.Signing.PrivateKey = Fixtures.siteKey
    ) throws -> ControllerIdentity {
        let certificate = try ControllerCertificateTests.issue(
            validUntil: validUntil, readers: readers, siteKey: siteKey)
        return try #require(ControllerIdentity(key: controllerKey, certificate: certificate))
    }

    static func trust(withdrawn: Set<UInt64> = [], now: Double = now) -> CertificateTrust {
        CertificateTrust(
            chain: SiteKeyChain(registered: Fixtures.siteKey.publicKey, siteTag: Fixtures.siteTag, statements: []),
            withdrawn: withdrawn, now: now)
    }

    static func harness(
        _ identity: ControllerIdentity?, trust: CertificateTrust? = trust(), operation: ExchangeOperation = .access,
        secondFactorRequired: Bool = false, actions: [ReaderAction] = []
    ) -> ExchangeHarness {
        var configuration = ExchangeHarness.readerConfiguration(
            secondFactorRequired: secondFactorRequired, actions: actions)
        configuration.controller = identity
        return ExchangeHarness.standard(operation: operation, readerConfiguration: configuration, certificates: trust)
    }

    @Test func aCertifiedReaderIsGrantedWithoutTheSiteKeySigningAnything() throws {
        var harness = Self.harness(try Self.identity())
        // What the reader signs with: a site key no holder trusts would fail every signature.
        harness.reader = ReaderSession(
            configuration: {
                var configuration = harness.reader.configuration
                configuration.siteKey = P256.Signing.PrivateKey()
                return configuration
            }(), mtu: 23)
        harness.run(certified: true)
        #expect(harness.credentialOutcome == .decided(Self.granted))
        #expect(harness.readerReport?.outcome == .decided(Self.granted))
        // The first message is the certified challenge: type 08, the certificate inside.
        let first = try #require(harness.transcript.first { $0.0 == .toCredential }?.1)
        #expect(first[3] == 0x08)
        // 1 + 4 + 4 + 16 + 123 (the certificate, one reader) + 64 bytes: twelve fragments at
        // the 23-byte MTU a reader's first message is cut for (§5), against five in version 1.
        #expect(Fragmentation.fragments(of: Array(repeating: 0, count: 212), mtu: 23).count == 12)
        #expect(harness.transcript.prefix { $0.0 == .toCredential }.count == 12)
    }

    @Test func secondFactorAndActionsAreSignedByTheControllerToo() throws {
        var pin = Self.harness(try Self.identity(), secondFactorRequired: true)
        pin.secondFactor = .secondFactorKey(Fixtures.secondFactorKey)
        pin.run(certified: true)
        #expect(pin.credentialOutcome == .decided(Self.granted))
        var actions = Self.harness(
            try Self.identity(), operation: .enumerateActions, actions: [ReaderAction(id: 1, name: "Open")])
        actions.run(certified: true)
        #expect(actions.credentialOutcome == .actionsListed([ReaderAction(id: 1, name: "Open")]))
    }

    @Test func aHolderRefusesEachCertificateItMust() throws {
        let cases: [(ControllerIdentity, CertificateTrust, CertificateRefusal)] = [
            (
                try Self.identity(validUntil: ControllerCertificateTests.validFrom + 600), Self.trust(),
                .expired(
                    ControllerCertificateTests.validFrom + 600)
            ),
            (try Self.identity(), Self.trust(withdrawn: [7]), .withdrawn(7)),
            (try Self.identity(readers: [ReaderID(0x2A02)]), Self.trust(), .readerNotNamed(Fixtures.readerID)),
            (try Self.identity(signedBy: P256.Signing.PrivateKey()), Self.trust(), .badSignature),
        ]
        for (identity, trust, refusal) in cases {
            var harness = Self.harness(identity, trust: trust)
            harness.run(certified: true)
            #expect(harness.credentialOutcome == .failed(.badReaderSignature), "\(refusal)")
            #expect(harness.readerReport?.outcome == .failed(.remoteError(.badSignature)), "\(refusal)")
            // Nothing was answered: the holder's only message is the error.
            #expect(harness.transcript.filter { $0.0 == .toReader }.count == 1, "\(refusal)")
            // The reason, as the holder's session found it in the challenge the reader sent.
            var reassembler = FrameReassembler()
            var replay = ChallengeReplayGuard()
            var error: ProtocolError?
            for fragment in harness.transcript.filter({ $0.0 == .toCredential }).map(\.1) {
                guard let bytes = try reassembler.feed(fragment) else { continue }
                guard case .challenge(let challenge) = try ProtocolMessage(decoding: bytes) else { continue }
                do {
                    _ = try challenge.verify(
                        readerID: Fixtures.readerID, siteTag: Fixtures.siteTag,
                        sitePublicKey: Fixtures.siteKey.publicKey, certificates: trust, replayGuard: &replay)
                } catch let thrown {
                    error = thrown
                }
            }
            #expect(error == .certificate(refusal))
        }
    }

    @Test func versionsMeetAsTheHolderAndReaderAllow() throws {
        // A version 3 holder and a reader that has no certificate: the site key, as before.
        var legacy = Self.harness(nil)
        legacy.run(certified: true)
        #expect(legacy.credentialOutcome == .decided(Self.granted))
        // A certified reader and a holder that did not ask: the site key, as before.
        var unasked = Self.harness(try Self.identity())
        unasked.run(certified: false)
        #expect(unasked.credentialOutcome == .decided(Self.granted))
        #expect(unasked.transcript.first { $0.0 == .toCredential }?.1[3] == 0x01)
        // A holder that does not speak version 3 does not know the certified challenge.
        var old = Self.harness(try Self.identity(), trust: nil)
        old.run(certified: true)
        #expect(old.credentialOutcome == .failed(.protocolViolation))
        // A certificate for another key than the controller's is no identity at all.
        let other = try ControllerCertificate.issue(
            siteKey: Fixtures.siteKey, siteTag: Fixtures.siteTag, serial: 1, validFrom: 1, validUntil: 2,
            controllerKey: Fixtures.credentialKey.publicKey, readers: [Fixtures.readerID])
        #expect(ControllerIdentity(key: Self.controllerKey, certificate: other) == nil)
    }

    @Test func aReaderWithoutTheSiteKeySpeaksOnlyVersionThree() throws {
        // The reader of a site that allows only version 3: no site key, its own certificate.
        func withoutSiteKey(_ identity: ControllerIdentity?) -> ExchangeHarness {
            var harness = Self.harness(identity)
            var configuration = harness.reader.configuration
            configuration.siteKey = nil
            harness.reader = ReaderSession(configuration: configuration, mtu: 23)
            return harness
        }
        var asked = withoutSiteKey(try Self.identity())
        asked.run(certified: true)
        #expect(asked.credentialOutcome == .decided(Self.granted))
        // A holder that asked for less gets error unsupportedVersion (7F 0B) and nothing signed:
        // the reader cannot prove it is the site's, and the holder reports it as such.
        for (identity, certified) in [(try Self.identity(), false), (nil, true)] {
            var refused = withoutSiteKey(identity)
            refused.run(certified: certified)
            #expect(refused.readerReport?.outcome == .refused(.unsupportedVersion))
            #expect(refused.transcript.first { $0.0 == .toCredential }?.1 == [0xC0, 0x00, 0x02, 0x7F, 0x0B])
            #expect(refused.credentialOutcome == .failed(.badReaderSignature))
        }
    }

    @Test func aStandingCertifiedChallengeHandsTheControllerKeyToTheDoor() throws {
        var configuration = ExchangeHarness.readerConfiguration()
        configuration.controller = try Self.identity()
        var reader = ReaderSession(configuration: configuration, mtu: 23)
        var standing = StandingChallenge(
            readerID: Fixtures.readerID, siteTag: Fixtures.siteTag, sitePublicKey: Fixtures.siteKey.publicKey,
            certificates: Self.trust())
        var replay = ChallengeReplayGuard()
        var toHolder: [[UInt8]] = []
        for action in reader.handle(
            .connected(
                nonce: ExchangeHarness.nonce, secondFactorNonce: ExchangeHarness.secondNonce, standing: true,
                certified: true))
        {
            if case .send(let fragments) = action { toHolder += fragments }
        }
        for fragment in toHolder { try standing.receive(fragment, at: .zero, replayGuard: &replay) }
        let handover = standing.handover(at: .zero)
        #expect(handover.nonce == ExchangeHarness.nonce)
        #expect(
            handover.signer?.compressedRepresentation == Self.controllerKey.publicKey.compressedRepresentation)
        var harness = ExchangeHarness(
            credential: CredentialSession(
                readerID: Fixtures.readerID, siteTag: Fixtures.siteTag, sitePublicKey: Fixtures.siteKey.publicKey,
                presentation: .mobile(Fixtures.credentialID, Fixtures.credentialKey), operation: .access,
                certificates: Self.trust()),
            reader: reader)
        harness.credential.takeOver(handover)
        harness.replayGuard = replay
        var toReader: [[UInt8]] = []
        var none: [[UInt8]] = []
        for action in harness.credential.handle(.connected, replayGuard: &harness.replayGuard) {
            if case .send(let fragments) = action { toReader += fragments }
        }
        harness.pump(&toReader, &none)
        // The decision verified under the controller key handed over, not the site key.
        #expect(harness.credentialOutcome == .decided(Self.granted))
    }
}
