import Crypto
import Testing

@testable import AccessCore

/// Site key rotation (docs/reader-protocol.md §1.2): §9's statement, signed by Python's
/// `cryptography`, and the chain a holder follows from the key it registered with.
@Suite("Site key chain")
struct SiteKeyChainTests {
    static let nextKey = Fixtures.privateKey("2b7e151628aed2a6abf7158809cf4f3c762e7160f38b4da56a784d9045190cfe")
    static let since: UInt32 = 1_796_083_200
    static let week = Double(ControllerCertificate.maximumValidity)

    static func statement(
        from old: P256.Signing.PrivateKey = Fixtures.siteKey, to new: P256.Signing.PrivateKey = nextKey,
        generation: UInt32 = 2, since: UInt32 = since, tag: SiteTag = Fixtures.siteTag
    ) -> SiteKeyTransition {
        SiteKeyTransition.sign(oldKey: old, siteTag: tag, generation: generation, since: since, newKey: new.publicKey)
    }

    static func same(_ lhs: [P256.Signing.PublicKey], _ rhs: [P256.Signing.PrivateKey]) -> Bool {
        lhs.map(\.compressedRepresentation) == rhs.map(\.publicKey.compressedRepresentation)
    }

    @Test func vectorsMatchAndPythonsSignatureVerifies() throws {
        let vectors = try ProtocolVectorTests()
        #expect(try vectors.vector("nextSite.privateKey") == Array(Self.nextKey.rawRepresentation))
        #expect(try vectors.vector("nextSite.compressedKey") == Array(Self.nextKey.publicKey.compressedRepresentation))
        #expect(try vectors.vector("siteKey.signedContent") == Self.statement().signedContent)
        let python = try SiteKeyTransition(decoding: vectors.vector("siteKey.encoded"))
        #expect(python.signedContent == Self.statement().signedContent)
        #expect(python.encoded.count == 110)
        let chain = SiteKeyChain(
            registered: Fixtures.siteKey.publicKey, siteTag: Fixtures.siteTag, statements: [python])
        #expect(Self.same([chain.newest], [Self.nextKey]))
    }

    @Test func aHolderFollowsTheChainAndRetiresOldKeysAfterAWeek() {
        let third = P256.Signing.PrivateKey()
        let statements = [
            Self.statement(from: Self.nextKey, to: third, generation: 3, since: Self.since + 30 * 86_400),
            Self.statement(),
        ]
        let chain = SiteKeyChain(
            registered: Fixtures.siteKey.publicKey, siteTag: Fixtures.siteTag, statements: statements)
        #expect(Self.same(chain.keys.map(\.key), [Fixtures.siteKey, Self.nextKey, third]))
        let since = Double(Self.since)
        #expect(Self.same(chain.trustedKeys(at: since), [Fixtures.siteKey, Self.nextKey, third]))
        // The registered key retires a week (and the clock tolerance) after the hand-over.
        #expect(Self.same(chain.trustedKeys(at: since + Self.week + 299), [Fixtures.siteKey, Self.nextKey, third]))
        #expect(Self.same(chain.trustedKeys(at: since + Self.week + 300), [Self.nextKey, third]))
        #expect(Self.same(chain.trustedKeys(at: since + 40 * 86_400), [third]))
    }

    @Test func statementsNotSignedByTheChainAreIgnored() {
        let stranger = P256.Signing.PrivateKey()
        let registered = Fixtures.siteKey.publicKey
        // Signed by a key the holder never trusted, of another site, or not newer: ignored.
        for statements in [
            [Self.statement(from: stranger)],
            [Self.statement(tag: SiteTag(0x1234_5678))],
        ] {
            let chain = SiteKeyChain(registered: registered, siteTag: Fixtures.siteTag, statements: statements)
            #expect(Self.same(chain.keys.map(\.key), [Fixtures.siteKey]))
        }
        let backwards = [Self.statement(), Self.statement(from: Self.nextKey, to: stranger, generation: 2)]
        let chain = SiteKeyChain(registered: registered, siteTag: Fixtures.siteTag, statements: backwards)
        #expect(Self.same(chain.keys.map(\.key), [Fixtures.siteKey, Self.nextKey]))
        // The old key signed two new keys of one generation: the holder keeps the one it has.
        let rivals = [Self.statement(), Self.statement(to: stranger)]
        let stopped = SiteKeyChain(registered: registered, siteTag: Fixtures.siteTag, statements: rivals)
        #expect(Self.same(stopped.keys.map(\.key), [Fixtures.siteKey]))
    }

    @Test func malformedStatementsAreRefusedByName() {
        let statement = Self.statement()
        let encoded = statement.encoded
        #expect((try? SiteKeyTransition(decoding: encoded)) == statement)
        #expect(throws: SiteKeyTransitionError.size(109)) { try SiteKeyTransition(decoding: Array(encoded.dropLast())) }
        #expect(throws: SiteKeyTransitionError.size(111)) { try SiteKeyTransition(decoding: encoded + [0]) }
        var format = encoded
        format[0] = 9
        #expect(throws: SiteKeyTransitionError.unknownFormat(9)) { try SiteKeyTransition(decoding: format) }
        var key = encoded
        key[13] = 0x05
        #expect(throws: SiteKeyTransitionError.invalidKey) { try SiteKeyTransition(decoding: key) }
    }
}
