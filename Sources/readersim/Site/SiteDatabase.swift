import AccessCore
import Crypto
import Foundation
import GRDB

/// The simulated site's data in one SQLite file: the site's identity and signing key,
/// invitations, registered credentials, items pushed to credentials, and recently seen
/// request nonces. `readersim site` commands, the site's HTTP server and the simulated
/// readers all open the same file (WAL lets them share it while running).
final class SiteDatabase: Sendable {
    struct Site: Sendable {
        var name: String
        var tag: SiteTag
        var key: P256.Signing.PrivateKey
    }

    struct Invitation: Sendable {
        var code: String
        var cardholder: String
        var secondFactor: Bool
        var expiresAt: Double
        var usedAt: Double?
    }

    struct CredentialRow: Sendable {
        var id: CredentialID
        var cardholder: String
        var deviceName: String
        var publicKey: P256.Signing.PublicKey
        var secondFactorKey: P256.Signing.PublicKey?
        var secondFactor: Bool
        var state: CredentialState
        var deleted: Bool
    }

    struct Item: Sendable {
        var id: String
        var credentialID: CredentialID
        var type: String
        var name: String
        var state: CredentialState
        /// The item's JSON object as sent to accessd (type-specific fields).
        var payload: String
        var sequence: Int64
        var removed: Bool
    }

    let path: String
    let database: DatabasePool

    init(path: String) throws {
        self.path = path
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        database = try DatabasePool(path: path, configuration: configuration)
        chmod(path, 0o600)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "site") { t in
                t.column("id", .integer).primaryKey().check { $0 == 1 }
                t.column("name", .text).notNull()
                t.column("tag", .integer).notNull()
                t.column("privateKey", .blob).notNull()
            }
            try db.create(table: "invitation") { t in
                t.primaryKey("code", .text)
                t.column("cardholder", .text).notNull()
                t.column("secondFactor", .boolean).notNull()
                t.column("createdAt", .double).notNull()
                t.column("expiresAt", .double).notNull()
                t.column("usedAt", .double)
                t.column("credentialID", .text)
            }
            try db.create(table: "credential") { t in
                t.primaryKey("id", .text)
                t.column("cardholder", .text).notNull()
                t.column("deviceName", .text).notNull()
                t.column("publicKey", .blob).notNull()
                t.column("secondFactorKey", .blob)
                t.column("secondFactor", .boolean).notNull()
                t.column("state", .text).notNull()
                t.column("deleted", .boolean).notNull().defaults(to: false)
                t.column("createdAt", .double).notNull()
            }
            // `sequence` orders changes for the sync cursor: every add, update or removal
            // takes the next value of the change counter.
            try db.create(table: "item") { t in
                t.primaryKey("id", .text)
                t.column("credentialID", .text).notNull().indexed()
                t.column("type", .text).notNull()
                t.column("name", .text).notNull()
                t.column("state", .text).notNull()
                t.column("payload", .text).notNull()
                t.column("sequence", .integer).notNull()
                t.column("removed", .boolean).notNull().defaults(to: false)
            }
            try db.create(table: "counter") { t in
                t.primaryKey("name", .text)
                t.column("value", .integer).notNull()
            }
            try db.create(table: "nonce") { t in
                t.primaryKey("nonce", .text)
                t.column("seenAt", .double).notNull()
            }
        }
        Self.registerAuditMigration(&migrator)
        Self.registerReaderMigration(&migrator)
        Self.registerCertificateMigration(&migrator)
        try migrator.migrate(database)
    }

    // MARK: Site

    /// The site, created with `name` and `tag` (or defaults) on first use.
    func site(creatingWithName name: String? = nil, tag: SiteTag? = nil) throws -> Site {
        try database.write { db in
            if let row = try Row.fetchOne(db, sql: "SELECT name, tag, privateKey FROM site WHERE id = 1") {
                let keyBytes: Data = row["privateKey"]
                return Site(
                    name: row["name"], tag: SiteTag(UInt32(truncatingIfNeeded: row["tag"] as Int64)),
                    key: try P256.Signing.PrivateKey(rawRepresentation: keyBytes))
            }
            let key = P256.Signing.PrivateKey()
            let site = Site(name: name ?? "Simulated site", tag: tag ?? SiteTag(1), key: key)
            try db.execute(
                sql: "INSERT INTO site(id, name, tag, privateKey) VALUES (1, ?, ?, ?)",
                arguments: [site.name, Int64(site.tag.rawValue), key.rawRepresentation])
            return site
        }
    }

    // MARK: Invitations

    func addInvitation(cardholder: String, secondFactor: Bool, expiresAt: Double, now: Double) throws -> InvitationCode
    {
        var generator = SystemRandomNumberGenerator()
        let code = InvitationCode.random(using: &generator)
        try database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO invitation(code, cardholder, secondFactor, createdAt, expiresAt) VALUES (?, ?, ?, ?, ?)
                    """, arguments: [code.canonical, cardholder, secondFactor, now, expiresAt])
        }
        return code
    }

    enum RegistrationRefusal: Error {
        case unknown
        case expired(Double)
        case used
        /// The invitation asks for a second factor and the registration brought no key.
        case secondFactorRequired
    }

    /// Uses an invitation and records the credential in one transaction: both or neither.
    func register(
        code: InvitationCode, deviceName: String, publicKey: P256.Signing.PublicKey,
        secondFactorKey: P256.Signing.PublicKey?, now: Double
    ) throws -> Result<CredentialRow, RegistrationRefusal> {
        try database.write { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT * FROM invitation WHERE code = ?",
                    arguments: [code.canonical])
            else { return .failure(.unknown) }
            if (row["usedAt"] as Double?) != nil { return .failure(.used) }
            let expiresAt: Double = row["expiresAt"]
            if expiresAt <= now { return .failure(.expired(expiresAt)) }
            // Without the key a PIN could never be set: refused, the invitation left unused.
            if row["secondFactor"] as Bool, secondFactorKey == nil { return .failure(.secondFactorRequired) }
            var idBytes = [UInt8](repeating: 0, count: 16)
            var generator = SystemRandomNumberGenerator()
            for index in idBytes.indices { idBytes[index] = UInt8.random(in: 0...255, using: &generator) }
            guard let id = CredentialID(bytes: idBytes) else { return .failure(.unknown) }
            let credential = CredentialRow(
                id: id, cardholder: row["cardholder"], deviceName: deviceName,
                publicKey: publicKey, secondFactorKey: secondFactorKey,
                secondFactor: row["secondFactor"], state: .active, deleted: false)
            try db.execute(
                sql: """
                    INSERT INTO credential(id, cardholder, deviceName, publicKey, secondFactorKey, secondFactor, state, createdAt,
                                           sequence)
                    VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?)
                    """,
                arguments: [
                    id.description, credential.cardholder, deviceName, publicKey.x963Representation,
                    secondFactorKey?.x963Representation, credential.secondFactor, now,
                    try Self.nextSequence(db),
                ])
            try db.execute(
                sql: "UPDATE invitation SET usedAt = ?, credentialID = ? WHERE code = ?",
                arguments: [now, id.description, code.canonical])
            return .success(credential)
        }
    }

    // MARK: Credentials

    func credential(_ id: CredentialID) throws -> CredentialRow? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM credential WHERE id = ?", arguments: [id.description])
                .flatMap(Self.credential(from:))
        }
    }

    func credentials() throws -> [CredentialRow] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM credential ORDER BY createdAt").compactMap(Self.credential(from:))
        }
    }

    /// Finds a credential by its full id or a unique prefix of it (what a person types).
    func resolveCredential(_ text: String) throws -> CredentialRow? {
        let lower = text.lowercased()
        let matches = try credentials().filter { $0.id.description.hasPrefix(lower) }
        return matches.count == 1 ? matches[0] : nil
    }

    static func credential(from row: Row) -> CredentialRow? {
        guard let id = CredentialID(row["id"] as String),
            let publicKey = try? P256.Signing.PublicKey(x963Representation: row["publicKey"] as Data),
            let state = CredentialState(rawValue: row["state"])
        else { return nil }
        let secondKey = (row["secondFactorKey"] as Data?).flatMap {
            try? P256.Signing.PublicKey(x963Representation: $0)
        }
        return CredentialRow(
            id: id, cardholder: row["cardholder"], deviceName: row["deviceName"], publicKey: publicKey,
            secondFactorKey: secondKey, secondFactor: row["secondFactor"], state: state,
            deleted: row["deleted"])
    }

    func setState(_ id: CredentialID, _ state: CredentialState) throws {
        try database.write { db in
            // A new sequence: readers learn the change from their next provisioning call (§7).
            try db.execute(
                sql: "UPDATE credential SET state = ?, sequence = ? WHERE id = ?",
                arguments: [state.rawValue, try Self.nextSequence(db), id.description])
        }
    }

    func markDeleted(_ id: CredentialID) throws {
        try database.write { db in
            try db.execute(
                sql: "UPDATE credential SET deleted = 1, state = 'revoked', sequence = ? WHERE id = ?",
                arguments: [try Self.nextSequence(db), id.description])
        }
    }

    // MARK: Items

    /// The newest value of the change counter: no cursor the site gave is beyond it.
    func latestSequence() throws -> Int64 {
        try database.read { db in try Int64.fetchOne(db, sql: "SELECT value FROM counter WHERE name = 'item'") ?? 0 }
    }

    /// The change counter that orders item changes and, for readers (§7), credential changes.
    static func nextSequence(_ db: Database) throws -> Int64 {
        try db.execute(
            sql: """
                INSERT INTO counter(name, value) VALUES ('item', 1) ON CONFLICT(name) DO UPDATE SET value = value + 1
                """)
        return try Int64.fetchOne(db, sql: "SELECT value FROM counter WHERE name = 'item'") ?? 1
    }

    func addItem(id: String, credential: CredentialID, type: String, name: String, payload: String) throws {
        try database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO item(id, credentialID, type, name, state, payload, sequence) VALUES (?, ?, ?, ?, 'active', ?, ?)
                    """, arguments: [id, credential.description, type, name, payload, try Self.nextSequence(db)])
        }
    }

    /// Changes an item's name or state; false when there is no such item.
    func updateItem(id: String, name: String?, state: CredentialState?) throws -> Bool {
        try database.write { db in
            guard try Row.fetchOne(db, sql: "SELECT 1 FROM item WHERE id = ? AND removed = 0", arguments: [id]) != nil
            else { return false }
            try db.execute(
                sql: "UPDATE item SET name = coalesce(?, name), state = coalesce(?, state), sequence = ? WHERE id = ?",
                arguments: [name, state?.rawValue, try Self.nextSequence(db), id])
            return true
        }
    }

    func removeItem(id: String) throws -> Bool {
        try database.write { db in
            guard try Row.fetchOne(db, sql: "SELECT 1 FROM item WHERE id = ? AND removed = 0", arguments: [id]) != nil
            else { return false }
            try db.execute(
                sql: "UPDATE item SET removed = 1, sequence = ? WHERE id = ?",
                arguments: [try Self.nextSequence(db), id])
            return true
        }
    }

    /// What changes when anything a credential's holder syncs changes: its state, its items'
    /// last change and the site's last withdrawn certificate (the `changes` long poll compares
    /// it, so a withdrawal reaches holders at once).
    func version(of credential: CredentialID) throws -> String? {
        try database.read { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT state, deleted FROM credential WHERE id = ?",
                    arguments: [credential.description])
            else { return nil }
            let items =
                try Int64.fetchOne(
                    db, sql: "SELECT MAX(sequence) FROM item WHERE credentialID = ?",
                    arguments: [credential.description]) ?? 0
            let withdrawn =
                try Int64.fetchOne(db, sql: "SELECT MAX(serial) FROM certificate WHERE withdrawn = 1") ?? 0
            return "\(row["state"] as String)-\(row["deleted"] as Bool ? 1 : 0)-\(items)-\(withdrawn)"
        }
    }

    /// Changes for a credential after `cursor`, oldest first.
    func items(for credential: CredentialID, after cursor: Int64, limit: Int) throws -> [Item] {
        try database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM item WHERE credentialID = ? AND sequence > ? ORDER BY sequence LIMIT ?
                    """, arguments: [credential.description, cursor, limit]
            ).compactMap(Self.item(from:))
        }
    }

    func allItems() throws -> [Item] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM item WHERE removed = 0 ORDER BY sequence").compactMap(
                Self.item(from:))
        }
    }

    static func item(from row: Row) -> Item? {
        guard let credential = CredentialID(row["credentialID"] as String) else { return nil }
        return Item(
            id: row["id"], credentialID: credential,
            type: row["type"], name: row["name"], state: CredentialState(rawValue: row["state"]) ?? .revoked,
            payload: row["payload"], sequence: row["sequence"], removed: row["removed"])
    }

    // MARK: Nonces

    /// Records a request nonce; false when it was seen within the replay window.
    func admitNonce(_ nonce: [UInt8], now: Double) throws -> Bool {
        try database.write { db in
            try db.execute(
                sql: "DELETE FROM nonce WHERE seenAt < ?",
                arguments: [now - Double(SiteRequestAuthorization.nonceMemory)])
            if try Row.fetchOne(db, sql: "SELECT 1 FROM nonce WHERE nonce = ?", arguments: [nonce.hexString]) != nil {
                return false
            }
            try db.execute(sql: "INSERT INTO nonce(nonce, seenAt) VALUES (?, ?)", arguments: [nonce.hexString, now])
            return true
        }
    }
}
