import Crypto
import FoundationEssentials

/// How the database's secrets are kept, as `status.get` and `diagnose` show it.
public struct SecretsAtRest: Sendable, Hashable {
    /// `tpm2`, `host` or `keyFile` (what protects the data key), or `none` without a data key.
    public var protection: String
    /// Every secret in the database is sealed with a data key (false only for a database from
    /// before sealing that no data key has opened yet).
    public var sealed: Bool
    /// Where the data key was read from.
    public var keyOrigin: String?
    /// Why secrets cannot be opened or stored, when they cannot.
    public var problem: String?
    /// Plaintext secrets sealed at this start (a database from before sealing).
    public var migrated: Int
}

/// A secret could not be stored.
public enum SecretStorageError: Error, Sendable, CustomStringConvertible {
    case noDataKey(String)

    public var description: String {
        switch self {
        case .noDataKey(let reason): "no data key to seal secrets with (\(reason)): nothing secret is stored"
        }
    }
}

extension AccessStore {
    static let secretsFormatSetting = "store.secrets"
    static let sealedFormat = "sealed-1"

    /// Seals a database from before sealing: every plaintext secret is encrypted in place in one
    /// transaction, then the pages and the write-ahead log that held the plaintext are rewritten
    /// (checkpoint, VACUUM, checkpoint), so the old bytes are in none of the files.
    static func sealPlaintextSecrets(_ database: SQLiteDatabase, key: DataKey) throws -> Int {
        let sealedCount = try database.write { db -> Int in
            var count = 0
            for row in try db.rows(sql: "SELECT id, signingKey, sealedSecondFactor FROM credential") {
                let id: String = try row["id"]
                let signingKey: Data = try row["signingKey"]
                let secondFactor: Data? = try row["sealedSecondFactor"]
                try db.execute(
                    sql: "UPDATE credential SET signingKey = ?, sealedSecondFactor = ? WHERE id = ?",
                    arguments: [
                        signingKey.isEmpty
                            ? signingKey
                            : try SealedColumn.seal(signingKey, key: key, place: SealedColumn.signingKey(id)),
                        try secondFactor.map {
                            try SealedColumn.seal($0, key: key, place: SealedColumn.secondFactor(id))
                        },
                        id,
                    ])
                count += (signingKey.isEmpty ? 0 : 1) + (secondFactor == nil ? 0 : 1)
            }
            for row in try db.rows(sql: "SELECT credentialID, id, aperioKey FROM item WHERE aperioKey IS NOT NULL") {
                let credential: String = try row["credentialID"]
                let id: String = try row["id"]
                let aperioKey: Data = try row["aperioKey"]
                try db.execute(
                    sql: "UPDATE item SET aperioKey = ? WHERE credentialID = ? AND id = ?",
                    arguments: [
                        try SealedColumn.seal(aperioKey, key: key, place: SealedColumn.aperioKey(credential, id)),
                        credential, id,
                    ])
                count += 1
            }
            try setSetting(db, secretsFormatSetting, sealedFormat)
            try setSetting(
                db, SealedColumn.keyCheck,
                try SealedColumn.seal(SealedColumn.keyCheckValue, key: key, place: SealedColumn.keyCheck)
                    .base64EncodedString())
            return count
        }
        try database.writeWithoutTransaction { db in
            try db.checkpointTruncating()
            try db.execute(sql: "VACUUM")
            try db.checkpointTruncating()
        }
        return sealedCount
    }

    /// Whether `key` is the data key the database was first sealed with.
    static func keyMatches(_ database: SQLiteDatabase, key: DataKey) throws -> Bool {
        let check = try database.read { db in
            try db.value(
                String.self, sql: "SELECT value FROM setting WHERE key = ?", arguments: [SealedColumn.keyCheck])
        }
        guard let check, let sealed = Data(base64Encoded: check) else { return true }
        return SealedColumn.open(sealed, key: key, place: SealedColumn.keyCheck) == SealedColumn.keyCheckValue
    }

    static func isSealed(_ database: SQLiteDatabase) throws -> Bool {
        try database.read { db in
            try db.value(String.self, sql: "SELECT value FROM setting WHERE key = ?", arguments: [secretsFormatSetting])
        } == sealedFormat
    }

    private static func setSetting(_ db: SQLiteConnection, _ key: String, _ value: String) throws {
        try db.execute(
            sql: "INSERT INTO setting(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            arguments: [key, value])
    }

    /// Why no secret can be stored now (no data key), or nil when one can.
    public var secretsUnstorable: String? {
        if case .failure(let problem) = dataKey { return problem.description }
        return nil
    }

    /// Seals a secret for writing; refuses without a data key (never stored in clear).
    func sealSecret(_ plaintext: Data, place: String) throws -> Data {
        guard case .success(let key) = dataKey else {
            if case .failure(let problem) = dataKey { throw SecretStorageError.noDataKey(problem.description) }
            throw SecretStorageError.noDataKey("none")
        }
        return try SealedColumn.seal(plaintext, key: key, place: place)
    }

    /// Opens a stored secret: plaintext in a database from before sealing that no key opened yet.
    func openSecret(_ stored: Data, place: String) -> Result<Data, KeyProblem> {
        guard secretsSealed else { return .success(stored) }
        switch dataKey {
        case .failure(let problem): return .failure(.noDataKey(problem.description))
        case .success(let key):
            guard let plaintext = SealedColumn.open(stored, key: key, place: place) else {
                return .failure(secretsAtRest.problem == nil ? .doesNotOpen : .sealedWithAnotherKey)
            }
            return .success(plaintext)
        }
    }
}

/// Why a credential's key cannot be used (`keyUnavailable` in credentials.list and diagnose).
public enum KeyProblem: Error, Sendable, Hashable, CustomStringConvertible {
    /// accessd has no data key at all.
    case noDataKey(String)
    /// The database was sealed with another data key: another machine's seal, or a data key
    /// replaced since.
    case sealedWithAnotherKey
    /// This value does not open with the data key the rest of the database opens with: a
    /// corrupt row, or a row sealed by another machine.
    case doesNotOpen
    /// The key opened but is not a P-256 key that signs and verifies (a corrupt row).
    case selfTestFailed

    public var description: String {
        switch self {
        case .noDataKey(let reason): "no data key (\(reason))"
        case .sealedWithAnotherKey: "sealed with another data key (another machine's, or one replaced since)"
        case .doesNotOpen: "does not open with this kiosk's data key (a corrupt row, or another machine's)"
        case .selfTestFailed: "the key opened but failed its self-test (a corrupt row)"
        }
    }
}
