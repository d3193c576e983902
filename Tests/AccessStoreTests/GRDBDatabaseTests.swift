import AccessCore
import Crypto
import Foundation
import GRDB
import Testing

@testable import AccessStore

/// The store reads SQLite through its C API since issue #37; before, through GRDB. A kiosk's
/// database from then opens as it was: GRDB's migrator, with the migrations of that version
/// (its table builders, as they were written, here), writes the schema and the rows with
/// GRDB's own storage of each Swift type; the store then finds every migration done, reads
/// the settings, the journal, the credential and its item, and seals the plaintext secrets
/// of a database from before sealing as it always did.
@Suite("A database GRDB wrote", .timeLimit(.minutes(5)))
struct GRDBDatabaseTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("accessd-grdb-\(UUID().uuidString)")
        .path
    static let credential = String(repeating: "03", count: 16)

    @Test func opensWithItsMigrationsSettingsJournalAndCredentials() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let signingKey = P256.Signing.PrivateKey()
        let lockKey = [UInt8](repeating: 0xB3, count: 16)
        do {
            let pool = try DatabasePool(path: directory + "/accessd.sqlite")
            try Self.migratorOfTheGRDBVersion().migrate(pool)
            try pool.write { db in
                try db.execute(sql: "INSERT INTO setting(key, value) VALUES ('scanning', 'false')")
                for (time, kind) in [(1.5, "sdk.state"), (2.25, "access.result"), (3.0, "sdk.state")] {
                    try db.execute(
                        sql: "INSERT INTO event(time, kind, data) VALUES (?, ?, ?)",
                        arguments: [time, kind, #"{"credential":"\#(Self.credential)"}"#])
                }
                try db.execute(sql: "DELETE FROM event WHERE sequence = 3")
                try db.execute(
                    sql: """
                        INSERT INTO credential(id, siteName, siteTag, sitePublicKey, siteURL, cardholder, deviceName,
                          state, secondFactor, signingKey, registeredAt, lastSyncAt, itemCursor, priority)
                        VALUES (?, 'Site', 42, ?, 'https://site', 'Ada', 'kiosk', 'active', ?, ?, 12.5, ?, '7', 2)
                        """,
                    arguments: [
                        Self.credential, P256.Signing.PrivateKey().publicKey.x963Representation, false,
                        signingKey.rawRepresentation, 20.75,
                    ])
                try db.execute(
                    sql: """
                        INSERT INTO item(credentialID, id, type, name, state, siteTag, aperioIdentifier, aperioKey,
                          validFrom, validUntil)
                        VALUES (?, 'lock-1', 'aperio', 'Store room', 'active', 42, ?, ?, ?, NULL)
                        """,
                    arguments: [Self.credential, Data([1, 2, 3, 4]), Data(lockKey), 100.0])
                try db.execute(
                    sql: "INSERT INTO audit_cursor(credentialID, through) VALUES (?, 1)", arguments: [Self.credential])
            }
        }

        let store = try AccessStore(directory: directory, dataKey: .success(.forTests))
        #expect(store.secretsAtRest.migrated == 2)
        #expect(try store.boolSetting("scanning") == false)
        #expect(try store.lastSequence() == 3 && store.firstSequence() == 1)
        #expect(try store.events(after: 0).map(\.time) == [1.5, 2.25])
        #expect(try store.auditCursor(Self.credential) == 1)
        let stored = try #require(try store.credentials().first)
        #expect(
            stored.keyProblem == nil && stored.credential.signingKey?.rawRepresentation == signingKey.rawRepresentation)
        #expect(stored.credential.secondFactorEnabled == false && stored.credential.siteTag == SiteTag(42))
        #expect(stored.registeredAt == 12.5 && stored.lastSyncAt == 20.75 && stored.itemCursor == "7")
        #expect(stored.priority == 2 && stored.failedPinAttempts == 0)
        // Migrations since GRDB ran on its database: nothing withdrawn yet.
        #expect(stored.withdrawnCertificates.isEmpty)
        let item = try #require(try store.items().first)
        #expect(item.aperioKey == lockKey && item.aperioIdentifier == [1, 2, 3, 4])
        #expect(item.validFrom == 100 && item.validUntil == nil && item.siteTag == SiteTag(42))
        // Appended after: the journal's numbers go on from the highest ever given.
        #expect(try store.append(kind: "sdk.state", data: "{}", time: 4).sequence == 4)
        let migrations = try DatabaseQueue(path: store.path).read { db in
            try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier")
        }
        #expect(
            migrations == [
                "v1", "v2-credentials", "v3-credential-priority", "v4-item-validity", "v5-audit-cursor",
                "v6-withdrawn-certificates",
            ])
    }

    /// GRDB stored an empty `Data` as a BLOB of no bytes, where SQLite binds NULL for a
    /// NULL pointer: a credential with no signing key (the NOT NULL column holds no bytes)
    /// is stored and read back without one.
    @Test func anEmptyBlobIsStoredAsNoBytesNotNull() throws {
        let store = try AccessStore(directory: directory, dataKey: .success(.forTests))
        let id = CredentialID(bytes: Array(repeating: 4, count: 16))!
        let credential = Credential(
            id: id, siteTag: SiteTag(0x2A), cardholderName: "Ada", kind: .mobile, state: .active,
            sitePublicKey: P256.Signing.PrivateKey().publicKey, signingKey: nil, sealedSecondFactor: nil,
            secondFactorEnabled: false)
        try store.insertCredential(
            StoredCredential(
                credential: credential, siteName: "Site", siteURL: "https://site", deviceName: "kiosk",
                registeredAt: 0))
        let stored = try #require(try store.credentials().first)
        #expect(stored.credential.signingKey == nil && stored.keyProblem == nil)
        #expect(
            try store.database.read { try $0.value(String.self, sql: "SELECT typeof(signingKey) FROM credential") }
                == "blob")
    }

    /// A new database: the schema the store writes itself is the one GRDB wrote.
    @Test func aNewDatabaseHasTheSchemaGRDBWrote() throws {
        let store = try AccessStore(directory: directory, dataKey: .success(.forTests))
        let grdbDirectory = directory + "-grdb"
        try FileManager.default.createDirectory(atPath: grdbDirectory, withIntermediateDirectories: true)
        let pool = try DatabasePool(path: grdbDirectory + "/accessd.sqlite")
        try Self.migratorOfTheGRDBVersion().migrate(pool)
        // And the migrations written since GRDB left, as the store runs them.
        try pool.write { db in
            try db.execute(
                sql: #"ALTER TABLE "credential" ADD COLUMN "withdrawnCertificates" TEXT NOT NULL DEFAULT ''"#)
        }
        func schema(_ reader: any DatabaseReader) throws -> [String] {
            try reader.read { db in
                try String.fetchAll(
                    db,
                    sql:
                        "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name != 'grdb_migrations' ORDER BY name"
                )
            }
        }
        let ours = try schema(DatabaseQueue(path: store.path))
        // Table by table, as the columns end up (SQLite keeps each ALTER's text apart, so the
        // columns are compared, not the statements).
        func columns(_ reader: any DatabaseReader) throws -> [String] {
            try reader.read { db in
                try String.fetchAll(
                    db,
                    sql: """
                        SELECT m.name || '.' || p.name || ' ' || p.type || ' ' || p."notnull" || ' '
                          || IFNULL(p.dflt_value, '-') || ' ' || p.pk
                        FROM sqlite_master m JOIN pragma_table_info(m.name) p
                        WHERE m.type = 'table' ORDER BY m.name, p.cid
                        """)
            }
        }
        #expect(try columns(DatabaseQueue(path: store.path)) == columns(pool))
        #expect(ours.count == (try schema(pool)).count)
        #expect(
            try DatabaseQueue(path: store.path).read { try String.fetchOne($0, sql: "PRAGMA journal_mode") } == "wal")
    }

    /// The migrations of the version that used GRDB (Sources/AccessStore before issue #37).
    static func migratorOfTheGRDBVersion() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "setting") { t in
                t.primaryKey("key", .text)
                t.column("value", .text).notNull()
            }
            try db.create(table: "event") { t in
                t.autoIncrementedPrimaryKey("sequence")
                t.column("time", .double).notNull()
                t.column("kind", .text).notNull()
                t.column("data", .text).notNull()
            }
            try db.create(index: "event_time", on: "event", columns: ["time"])
        }
        migrator.registerMigration("v2-credentials") { db in
            try db.create(table: "credential") { t in
                t.primaryKey("id", .text)
                t.column("siteName", .text).notNull()
                t.column("siteTag", .integer).notNull()
                t.column("sitePublicKey", .blob).notNull()
                t.column("siteURL", .text).notNull()
                t.column("cardholder", .text).notNull()
                t.column("deviceName", .text).notNull()
                t.column("state", .text).notNull()
                t.column("secondFactor", .boolean).notNull()
                t.column("signingKey", .blob).notNull()
                t.column("sealedSecondFactor", .blob)
                t.column("failedPinAttempts", .integer).notNull().defaults(to: 0)
                t.column("registeredAt", .double).notNull()
                t.column("lastSyncAt", .double)
                t.column("itemCursor", .text).notNull().defaults(to: "0")
            }
            try db.create(table: "item") { t in
                t.column("credentialID", .text).notNull().references("credential", onDelete: .cascade)
                t.column("id", .text).notNull()
                t.column("type", .text).notNull()
                t.column("name", .text).notNull()
                t.column("state", .text).notNull()
                t.column("siteTag", .integer)
                t.column("aperioIdentifier", .blob)
                t.column("aperioKey", .blob)
                t.column("data", .text)
                t.primaryKey(["credentialID", "id"])
            }
        }
        migrator.registerMigration("v3-credential-priority") { db in
            try db.alter(table: "credential") { t in t.add(column: "priority", .integer).notNull().defaults(to: 0) }
        }
        migrator.registerMigration("v4-item-validity") { db in
            try db.alter(table: "item") { t in
                t.add(column: "validFrom", .double)
                t.add(column: "validUntil", .double)
            }
        }
        migrator.registerMigration("v5-audit-cursor") { db in
            try db.create(table: "audit_cursor") { t in
                t.primaryKey("credentialID", .text).references("credential", onDelete: .cascade)
                t.column("through", .integer).notNull()
            }
            try db.execute(
                sql: """
                    INSERT INTO audit_cursor(credentialID, through)
                    SELECT id, (SELECT IFNULL(MAX(sequence), 0) FROM event) FROM credential
                    """)
        }
        return migrator
    }
}
