import Crypto
import Foundation
import Testing

@testable import AccessCore

/// The version 3 controller certificate (docs/reader-protocol.md §1.1): §9's vector lines,
/// signed by Python's `cryptography` (scripts/protocol-vectors), against the implementation;
/// then every structural refusal and every reason a holder refuses a well-formed one.
@Suite("Controller certificates")
struct ControllerCertificateTests {
    static let controllerKey = Fixtures.privateKey("7d1a3f0e5c2b49867f3e1d0c2b4a59687766554433221100ffeeddccbbaa9988")
    static let validFrom: UInt32 = 1_796_083_200  // 2026-12-01T00:00:00Z
    static let readers = [ReaderID(0x2A01), ReaderID(0x2A02)]

    static func issue(
        validFrom: UInt32 = validFrom, validUntil: UInt32 = validFrom + 86_400, readers: [ReaderID] = readers,
        siteKey: P256.Signing.PrivateKey = Fixtures.siteKey
    ) throws -> ControllerCertificate {
        try ControllerCertificate.issue(
            siteKey: siteKey, siteTag: Fixtures.siteTag, serial: 7, validFrom: validFrom, validUntil: validUntil,
            controllerKey: controllerKey.publicKey, readers: readers)
    }

    @Test func vectorsMatchAndPythonsSignatureVerifies() throws {
        let vectors = try ProtocolVectorTests()
        #expect(try vectors.vector("controller.privateKey") == Array(Self.controllerKey.rawRepresentation))
        #expect(try vectors.vector("controller.publicKey") == Array(Self.controllerKey.publicKey.x963Representation))
        #expect(
            try vectors.vector("controller.compressedKey")
                == Array(Self.controllerKey.publicKey.compressedRepresentation))
        let ours = try Self.issue()
        #expect(try vectors.vector("certificate.signedContent") == ours.signedContent)
        // Python's bytes decode to the same fields, and its signature verifies here.
        let python = try ControllerCertificate(decoding: vectors.vector("certificate.encoded"))
        #expect(python.signedContent == ours.signedContent)
        #expect(python.signature == (try vectors.vector("certificate.signature")))
        #expect(python.serial == 7 && python.readers == Self.readers && python.siteTag == Fixtures.siteTag)
        #expect(python.validFrom == Self.validFrom && python.validUntil == Self.validFrom + 86_400)
        #expect(
            python.refusal(
                siteTag: Fixtures.siteTag, siteKeys: [Fixtures.siteKey.publicKey], reader: ReaderID(0x2A02),
                at: Double(Self.validFrom) + 60) == nil)
        // Ours, re-encoded and decoded, is itself; 123 + 4 bytes for two readers.
        #expect(try ControllerCertificate(decoding: ours.encoded) == ours)
        #expect(ours.encoded.count == 127)
    }

    @Test func pythonsCertifiedChallengeDecodesAndVerifies() throws {
        let vectors = try ProtocolVectorTests()
        let content = SignedContent.challenge(
            readerID: Fixtures.readerID, siteTag: Fixtures.siteTag, nonce: ExchangeHarness.nonce, certified: true)
        #expect(try vectors.vector("certifiedChallenge.signedContent") == content)
        let bytes = try vectors.vector("certifiedChallenge.message")
        guard case .challenge(let challenge) = try ProtocolMessage(decoding: bytes) else {
            Issue.record("not a challenge")
            return
        }
        #expect(challenge.certificate?.encoded == (try vectors.vector("certificate.encoded")))
        #expect(challenge.signature == (try vectors.vector("certifiedChallenge.signature")))
        #expect(ProtocolMessage.challenge(challenge).encoded == bytes)
        var replay = ChallengeReplayGuard()
        let trust = CertificateTrust(
            chain: SiteKeyChain(registered: Fixtures.siteKey.publicKey, siteTag: Fixtures.siteTag, statements: []),
            now: Double(Self.validFrom) + 60)
        let signer = try challenge.verify(
            readerID: Fixtures.readerID, siteTag: Fixtures.siteTag, sitePublicKey: Fixtures.siteKey.publicKey,
            certificates: trust, replayGuard: &replay)
        #expect(signer.compressedRepresentation == Self.controllerKey.publicKey.compressedRepresentation)
        // A holder's session fed Python's challenge and decision, as a reader would send them
        // at the 23-byte MTU, decides "granted" under the controller key.
        var session = CredentialSession(
            readerID: Fixtures.readerID, siteTag: Fixtures.siteTag, sitePublicKey: Fixtures.siteKey.publicKey,
            presentation: .mobile(Fixtures.credentialID, Fixtures.credentialKey), operation: .access,
            certificates: trust)
        var fresh = ChallengeReplayGuard()
        var outcome: ExchangeOutcome?
        _ = session.handle(.connected, replayGuard: &fresh)
        for message in [bytes, try vectors.vector("certifiedDecision.message")] {
            for fragment in Fragmentation.fragments(of: message, mtu: 23) {
                for case .finish(let end) in session.handle(.fragmentReceived(fragment), replayGuard: &fresh) {
                    outcome = end
                }
            }
        }
        #expect(outcome == .decided(AccessResult(decision: .granted, mode: .access)))
        // Cut inside the certificate: truncated; its format byte changed: the field is named.
        #expect(throws: ProtocolError.truncatedMessage(type: 0x08)) {
            try ProtocolMessage(decoding: Array(bytes.prefix(60)))
        }
        var format = bytes
        format[25] = 2
        #expect(throws: ProtocolError.invalidField("certificate")) { try ProtocolMessage(decoding: format) }
    }

    @Test func everyReasonToRefuseIsItsOwn() throws {
        let certificate = try Self.issue()
        let inside = Double(Self.validFrom) + 3_600
        func refusal(
            tag: SiteTag = Fixtures.siteTag, keys: [P256.Signing.PublicKey] = [Fixtures.siteKey.publicKey],
            reader: ReaderID = ReaderID(0x2A01), at time: Double = inside, withdrawn: Set<UInt64> = []
        ) -> CertificateRefusal? {
            certificate.refusal(siteTag: tag, siteKeys: keys, reader: reader, at: time, withdrawn: withdrawn)
        }
        #expect(refusal() == nil)
        #expect(refusal(tag: SiteTag(0x1234_5678)) == .otherSite(Fixtures.siteTag))
        #expect(refusal(keys: [Fixtures.credentialKey.publicKey]) == .badSignature)
        // A site that handed over to a new key still accepts what the old one signed.
        #expect(refusal(keys: [Fixtures.credentialKey.publicKey, Fixtures.siteKey.publicKey]) == nil)
        #expect(refusal(reader: ReaderID(0x2A03)) == .readerNotNamed(ReaderID(0x2A03)))
        #expect(refusal(withdrawn: [7]) == .withdrawn(7))
        #expect(refusal(withdrawn: [8]) == nil)
        // Five minutes of clock difference either way, not a second more.
        let from = Double(Self.validFrom)
        let until = Double(Self.validFrom + 86_400)
        #expect(refusal(at: from - 300) == nil)
        #expect(refusal(at: from - 301) == .notYetValid(Self.validFrom))
        #expect(refusal(at: until + 299) == nil)
        #expect(refusal(at: until + 300) == .expired(Self.validFrom + 86_400))
        // A signature over other fields: one byte of the body changed.
        var tampered = certificate.encoded
        tampered[20] ^= 0x01  // inside validUntil
        let forged = try ControllerCertificate(decoding: tampered)
        #expect(
            forged.refusal(
                siteTag: Fixtures.siteTag, siteKeys: [Fixtures.siteKey.publicKey], reader: ReaderID(0x2A01),
                at: inside) == .badSignature)
    }

    @Test func malformedCertificatesAreRefusedByName() throws {
        let encoded = try Self.issue().encoded
        #expect(throws: ControllerCertificateError.truncated) { try ControllerCertificate(decoding: []) }
        #expect(throws: ControllerCertificateError.truncated) {
            try ControllerCertificate(decoding: Array(encoded.dropLast()))
        }
        #expect(throws: ControllerCertificateError.trailingBytes(1)) {
            try ControllerCertificate(decoding: encoded + [0])
        }
        var format = encoded
        format[0] = 2
        #expect(throws: ControllerCertificateError.unknownFormat(2)) { try ControllerCertificate(decoding: format) }
        var key = encoded
        key[21] = 0x04  // a compressed point starts 02 or 03
        #expect(throws: ControllerCertificateError.invalidControllerKey) { try ControllerCertificate(decoding: key) }
        #expect(throws: ControllerCertificateError.readerCount(0)) { try Self.issue(readers: []) }
        #expect(throws: ControllerCertificateError.readerCount(33)) {
            try Self.issue(readers: (1...33).map { ReaderID(UInt32($0)) })
        }
        #expect(throws: ControllerCertificateError.zeroReader) { try Self.issue(readers: [ReaderID(0)]) }
        #expect(throws: ControllerCertificateError.duplicateReader) {
            try Self.issue(readers: [ReaderID(0x2A01), ReaderID(0x2A01)])
        }
        #expect(throws: ControllerCertificateError.validity(from: Self.validFrom, until: Self.validFrom)) {
            try Self.issue(validUntil: Self.validFrom)
        }
        let eightDays = Self.validFrom + 8 * 86_400
        #expect(throws: ControllerCertificateError.validity(from: Self.validFrom, until: eightDays)) {
            try Self.issue(validUntil: eightDays)
        }
        #expect((try? Self.issue(validUntil: Self.validFrom + 7 * 86_400)) != nil)
        // The count byte says 33 readers: refused as such, whatever follows.
        var count = encoded
        count[54] = 33
        #expect(throws: ControllerCertificateError.readerCount(33)) { try ControllerCertificate(decoding: count) }
    }
}
