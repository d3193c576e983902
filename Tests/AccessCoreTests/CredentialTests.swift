import Crypto
import Testing

@testable import AccessCore

@Suite("Credentials and the sealed second factor", .timeLimit(.minutes(5)))
struct CredentialTests {
    /// Small scrypt parameters keep the tests quick; the format and code path are the same.
    static let quick = SealedSecondFactorKey.Parameters(log2N: 10, r: 8, p: 1)

    func sealed(pin: String = "482916") throws -> SealedSecondFactorKey {
        var generator = SeededGenerator(seed: 42)
        return try SealedSecondFactorKey.seal(
            Fixtures.secondFactorKey, pin: pin, credential: Fixtures.credentialID,
            parameters: Self.quick, using: &generator)
    }

    @Test func rightPINOpensTheKey() throws {
        let key = try sealed().unseal(pin: "482916", credential: Fixtures.credentialID)
        #expect(key.rawRepresentation == Fixtures.secondFactorKey.rawRepresentation)
    }

    @Test func wrongPINIsRefused() throws {
        #expect(throws: SecondFactorError.wrongPIN) {
            try sealed().unseal(pin: "482917", credential: Fixtures.credentialID)
        }
    }

    @Test func sealedKeyIsBoundToItsCredential() throws {
        let other = CredentialID(bytes: [UInt8](repeating: 1, count: 16))!
        #expect(throws: SecondFactorError.wrongPIN) {
            try sealed().unseal(pin: "482916", credential: other)
        }
    }

    @Test(arguments: ["", "123", "1234567890123", "12a4", "١٢٣٤", "12 34"])
    func badPINFormatsAreRefusedBeforeAnyWork(pin: String) {
        #expect(throws: SecondFactorError.invalidPINFormat) { try PIN.validate(pin) }
        var generator = SeededGenerator(seed: 1)
        #expect(throws: SecondFactorError.invalidPINFormat) {
            try SealedSecondFactorKey.seal(
                Fixtures.secondFactorKey, pin: pin, credential: Fixtures.credentialID,
                parameters: Self.quick, using: &generator)
        }
    }

    @Test func guardLocksOutAfterTheLimitAndSurvivesAReset() throws {
        let box = try sealed()
        var guardState = SecondFactorGuard(maximumAttempts: 3)
        for attempt in 1...2 {
            #expect(throws: SecondFactorError.wrongPIN) {
                try guardState.unseal(box, pin: "000000", credential: Fixtures.credentialID)
            }
            #expect(guardState.attemptsLeft == 3 - attempt)
        }
        // A right PIN before the limit resets the count.
        _ = try guardState.unseal(box, pin: "482916", credential: Fixtures.credentialID)
        #expect(guardState.attemptsLeft == 3)
        for _ in 1...2 {
            #expect(throws: SecondFactorError.wrongPIN) {
                try guardState.unseal(box, pin: "000000", credential: Fixtures.credentialID)
            }
        }
        #expect(throws: SecondFactorError.lockedOut) {
            try guardState.unseal(box, pin: "000000", credential: Fixtures.credentialID)
        }
        // Locked: even the right PIN is refused.
        #expect(throws: SecondFactorError.lockedOut) {
            try guardState.unseal(box, pin: "482916", credential: Fixtures.credentialID)
        }
        // The count is state the store keeps: a guard rebuilt from it is still locked.
        let restored = SecondFactorGuard(maximumAttempts: 3, failedAttempts: guardState.failedAttempts)
        #expect(restored.isLockedOut)
    }

    @Test func encodingRoundTripsAndRefusesDamage() throws {
        let box = try sealed()
        let bytes = box.encoded
        #expect(bytes.count == SealedSecondFactorKey.encodedLength)
        #expect(try SealedSecondFactorKey(encoded: bytes) == box)
        #expect(throws: SecondFactorError.malformedSealedKey) {
            try SealedSecondFactorKey(encoded: Array(bytes.dropLast()))
        }
        var badVersion = bytes
        badVersion[0] = 2
        #expect(throws: SecondFactorError.malformedSealedKey) { try SealedSecondFactorKey(encoded: badVersion) }
        var hugeN = bytes
        hugeN[1] = 40
        #expect(throws: SecondFactorError.malformedSealedKey) { try SealedSecondFactorKey(encoded: hugeN) }
        // A flipped ciphertext bit fails authentication like a wrong PIN.
        var flipped = bytes
        flipped[40] ^= 1
        #expect(throws: SecondFactorError.wrongPIN) {
            try SealedSecondFactorKey(encoded: flipped).unseal(pin: "482916", credential: Fixtures.credentialID)
        }
    }

    @Test func descriptionsShowNoSecrets() throws {
        let credential = Credential(
            id: Fixtures.credentialID, siteTag: Fixtures.siteTag, cardholderName: "Ana Lima", kind: .mobile,
            state: .active, sitePublicKey: Fixtures.siteKey.publicKey, signingKey: Fixtures.credentialKey,
            aperio: Fixtures.aperio, sealedSecondFactor: try sealed(), secondFactorEnabled: true)
        let text = "\(credential) \(Fixtures.aperio)"
        for secret in [
            [UInt8](Fixtures.credentialKey.rawRepresentation), Fixtures.aperio.key.withUnsafeBytes { [UInt8]($0) },
        ] {
            #expect(!text.lowercased().contains(Array(secret).hexString))
        }
        #expect(text.contains("Ana Lima"))
    }

    @Test func availabilityCountsOnlyUsableCredentials() {
        func credential(_ site: UInt32, _ kind: CredentialKind, _ state: CredentialState) -> Credential {
            Credential(
                id: CredentialID(bytes: [UInt8](repeating: UInt8(site), count: 16))!, siteTag: SiteTag(site),
                cardholderName: "x", kind: kind, state: state, sitePublicKey: Fixtures.siteKey.publicKey,
                signingKey: kind == .mobile ? Fixtures.credentialKey : nil,
                aperio: kind == .aperio ? Fixtures.aperio : nil)
        }
        let availability = Credential.availability(of: [
            credential(1, .mobile, .active), credential(2, .mobile, .suspended), credential(3, .mobile, .revoked),
            credential(4, .aperio, .active), credential(5, .aperio, .revoked),
        ])
        #expect(availability.mobileSites == [SiteTag(1)])
        #expect(availability.aperioSites == [SiteTag(4)])
    }
}
