import AccessCore
import Crypto
import Foundation
import GRDB
import Testing

@testable import AccessStore

/// Issue #32: every secret in the database sealed with the data key; a database from before
/// sealing sealed on first open, its plaintext gone from every file; a key that does not open
/// reported, never presented.
@Suite("Secrets at rest", .timeLimit(.minutes(5)))
struct SecretsAtRestTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "accessd-secrets-\(UUID().uuidString)"
    )
    .path
    static let otherKey = try! DataKey(bytes: Array(repeating: 0x33, count: 32), protection: .host, origin: "other")
    let lockKey = [UInt8](repeating: 0xA7, count: 32)

    func aperioItem(_ credential: CredentialID) -> StoredItem {
        StoredItem(
            id: "lock-1", credentialID: credential, type: "aperio", name: "Store room", state: .active,
            siteTag: SiteTag(0x2A), aperioIdentifier: [1, 2, 3, 4, 5, 6, 7, 8], aperioKey: lockKey)
    }

    @Test func noSecretIsInTheFilesInClearAndEachOpensAgain() throws {
        let key = P256.Signing.PrivateKey()
        let id: CredentialID
        do {
            let store = try AccessStore(directory: directory, dataKey: .success(.forTests))
            id = try store.insertTestCredential(byte: 1, key: key)
            try store.applyItemSync(credential: id, upserted: [aperioItem(id)], removed: [], cursor: "1", at: 0)
            #expect(!store.filesHold([UInt8](key.rawRepresentation)))
            #expect(!store.filesHold(lockKey))
            #expect(store.secretsAtRest.sealed && store.secretsAtRest.problem == nil)
        }
        let reopened = try AccessStore(directory: directory, dataKey: .success(.forTests))
        let stored = try #require(try reopened.credentials().first)
        #expect(stored.keyProblem == nil)
        #expect(stored.credential.signingKey?.rawRepresentation == key.rawRepresentation)
        #expect(try reopened.items().first?.aperioKey == lockKey)
    }

    /// Issue #33: `credentials.setPin` answered "changed" for a credential deleted while the
    /// PIN was being checked. Storing the new sealing now says whether a row took it.
    @Test func aNewPINForACredentialDeletedMeanwhileIsNotStored() throws {
        let store = try AccessStore(directory: directory, dataKey: .success(.forTests))
        let key = P256.Signing.PrivateKey()
        let id = try store.insertTestCredential(byte: 4, key: key)
        var generator = SystemRandomNumberGenerator()
        // scrypt at N = 2^10, as the shell harness seals: this suite runs on the cooperative
        // pool, and the standard cost in a debug build held a thread for seconds under load.
        let sealed = try SealedSecondFactorKey.seal(
            key, pin: "482916", credential: id, parameters: .init(log2N: 10, r: 8, p: 1), using: &generator)
        #expect(try store.setSealedSecondFactor(id, sealed))
        #expect(try store.deleteCredential(id))
        #expect(try !store.setSealedSecondFactor(id, sealed))
        #expect(try store.credentials().isEmpty)
    }

    /// The upgrade: a database the version before sealing wrote, opened with a data key.
    @Test func aDatabaseFromBeforeSealingIsSealedAndItsPlaintextIsGone() throws {
        let key = P256.Signing.PrivateKey()
        let secondFactor = [UInt8](repeating: 0x5F, count: SealedSecondFactorKey.encodedLength)
        do {
            // No data key: the store reads plaintext and stores nothing secret; the rows are
            // written as the version before sealing wrote them.
            let legacy = try AccessStore(directory: directory, dataKey: .failure(.notInstalled("test")))
            #expect(!legacy.secretsAtRest.sealed)
            try legacy.database.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO credential(id, siteName, siteTag, sitePublicKey, siteURL, cardholder, deviceName,
                          state, secondFactor, signingKey, sealedSecondFactor, registeredAt)
                        VALUES (?, 'Site', 42, ?, 'https://site', 'Ada', 'kiosk', 'active', 1, ?, ?, 0)
                        """,
                    arguments: [
                        String(repeating: "02", count: 16), P256.Signing.PrivateKey().publicKey.x963Representation,
                        key.rawRepresentation, Data(secondFactor),
                    ])
                try db.execute(
                    sql: """
                        INSERT INTO item(credentialID, id, type, name, state, siteTag, aperioIdentifier, aperioKey)
                        VALUES (?, 'lock-1', 'aperio', 'Store room', 'active', 42, ?, ?)
                        """,
                    arguments: [String(repeating: "02", count: 16), Data(repeating: 1, count: 8), Data(lockKey)])
            }
            #expect(try legacy.credentials().first?.credential.signingKey != nil, "plaintext is read without a key")
            #expect(
                legacy.filesHold([UInt8](key.rawRepresentation)), "the plaintext is on disk (else this proves nothing)")
            #expect(throws: SecretStorageError.self) { try legacy.insertTestCredential(byte: 3) }
        }
        let store = try AccessStore(directory: directory, dataKey: .success(.forTests))
        #expect(store.secretsAtRest.migrated == 3)
        for secret in [[UInt8](key.rawRepresentation), secondFactor, lockKey] {
            #expect(!store.filesHold(secret))
        }
        let stored = try #require(try store.credentials().first)
        #expect(stored.keyProblem == nil)
        #expect(stored.credential.signingKey?.rawRepresentation == key.rawRepresentation)
        #expect(try store.items().first?.aperioKey == lockKey)
    }

    /// A state directory copied to another kiosk: its data key is another one.
    @Test func anotherMachinesDataKeyLeavesEveryKeyUnavailable() throws {
        do {
            let store = try AccessStore(directory: directory, dataKey: .success(.forTests))
            let id = try store.insertTestCredential(byte: 4)
            try store.applyItemSync(credential: id, upserted: [aperioItem(id)], removed: [], cursor: "1", at: 0)
        }
        do {
            let elsewhere = try AccessStore(directory: directory, dataKey: .success(Self.otherKey))
            #expect(elsewhere.secretsAtRest.problem?.contains("another data key") == true)
            let stored = try #require(try elsewhere.credentials().first)
            #expect(stored.keyProblem == .sealedWithAnotherKey)
            #expect(stored.credential.signingKey == nil && !stored.credential.isUsable)
            let item = try #require(try elsewhere.items().first)
            #expect(item.aperioKey == nil && item.keyProblem == .sealedWithAnotherKey)
        }
        do {
            let keyless = try AccessStore(directory: directory, dataKey: .failure(.notInstalled("no credential")))
            guard case .noDataKey = try #require(try keyless.credentials().first).keyProblem else {
                Issue.record("a sealed database without a key must say so")
                return
            }
        }
        let home = try AccessStore(directory: directory, dataKey: .success(.forTests))
        #expect(try home.credentials().first?.keyProblem == nil, "back with its own key, it works")
    }

    @Test func aCorruptRowDoesNotOpenAndAKeyThatIsNoKeyFailsItsSelfTest() throws {
        let store = try AccessStore(directory: directory, dataKey: .success(.forTests))
        let corrupt = try store.insertTestCredential(byte: 5)
        let invalid = try store.insertTestCredential(byte: 6)
        var sealed = try store.storedSecret("SELECT signingKey FROM credential WHERE id = ?", corrupt.description)
        sealed[20] ^= 0x01
        // 32 bytes of 0xFF: above the P-256 group order, not a private key.
        let notAKey = try SealedColumn.seal(
            Data(repeating: 0xFF, count: 32), key: .forTests, place: SealedColumn.signingKey(invalid.description))
        try store.database.write { db in
            try db.execute(
                sql: "UPDATE credential SET signingKey = ? WHERE id = ?",
                arguments: [Data(sealed), corrupt.description])
            try db.execute(
                sql: "UPDATE credential SET signingKey = ? WHERE id = ?", arguments: [notAKey, invalid.description])
        }
        let problems = Dictionary(
            uniqueKeysWithValues: try store.credentials().map { ($0.credential.id, $0.keyProblem) })
        #expect(problems[corrupt] == .doesNotOpen)
        #expect(problems[invalid] == .selfTestFailed)
    }

    /// A sealed value moved to another row does not open there (the row is associated data).
    @Test func aSealedKeyMovedToAnotherRowDoesNotOpen() throws {
        let store = try AccessStore(directory: directory, dataKey: .success(.forTests))
        let first = try store.insertTestCredential(byte: 7)
        let second = try store.insertTestCredential(byte: 8)
        let moved = try store.storedSecret("SELECT signingKey FROM credential WHERE id = ?", first.description)
        try store.database.write { db in
            try db.execute(
                sql: "UPDATE credential SET signingKey = ? WHERE id = ?", arguments: [Data(moved), second.description])
        }
        #expect(try store.credentials().first { $0.credential.id == second }?.keyProblem == .doesNotOpen)
    }
}
