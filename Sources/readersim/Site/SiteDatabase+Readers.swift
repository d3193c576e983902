import AccessCore
import Crypto
import Foundation
import GRDB

/// The reader controllers a site provisions (docs/site-api.md §7): each is known by its
/// public key, enrolled by the site's operator (`readersim site reader add`), and reads
/// the credential and Aperio changes after a cursor, ordered by the one change counter.
extension SiteDatabase {
    struct ReaderRow: Sendable {
        var keyID: ReaderKeyID
        var name: String
        var publicKey: P256.Signing.PublicKey
        var createdAt: Double
        var removed: Bool
        /// The readers its certificates name (version 3), in the order its operator gave.
        var readers: [ReaderID]
    }

    /// A credential or an Aperio item changed after a cursor.
    enum ReaderChange: Sendable {
        case credential(CredentialRow, sequence: Int64)
        case aperio(Item)

        var sequence: Int64 {
            switch self {
            case .credential(_, let sequence): sequence
            case .aperio(let item): item.sequence
            }
        }
    }

    static func registerReaderMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v3-readers") { db in
            try db.create(table: "reader") { t in
                t.primaryKey("keyID", .text)
                t.column("name", .text).notNull()
                t.column("publicKey", .blob).notNull()
                t.column("createdAt", .double).notNull()
                t.column("removed", .boolean).notNull().defaults(to: false)
            }
            try db.alter(table: "credential") { t in
                t.add(column: "sequence", .integer).notNull().defaults(to: 0)
            }
            // Credentials from before: each its own place in the change order.
            for id in try String.fetchAll(db, sql: "SELECT id FROM credential ORDER BY createdAt") {
                try db.execute(
                    sql: "UPDATE credential SET sequence = ? WHERE id = ?", arguments: [try nextSequence(db), id])
            }
        }
    }

    /// Enrolls a reader controller's key, for `readers`; false when that key is already enrolled.
    func addReader(
        name: String, publicKey: P256.Signing.PublicKey, readers: [ReaderID] = [], now: Double
    ) throws -> Bool {
        let id = ReaderKeyID(publicKey: publicKey)
        return try database.write { db in
            if try Row.fetchOne(
                db, sql: "SELECT 1 FROM reader WHERE keyID = ? AND removed = 0",
                arguments: [id.description]) != nil
            {
                return false
            }
            try db.execute(
                sql: """
                    INSERT INTO reader(keyID, name, publicKey, createdAt, readers) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT(keyID) DO UPDATE SET name = excluded.name, createdAt = excluded.createdAt,
                    readers = excluded.readers, removed = 0
                    """, arguments: [id.description, name, publicKey.x963Representation, now, Self.readerList(readers)])
            return true
        }
    }

    /// Withdraws a controller's key: its next call is refused, and its certificates are
    /// withdrawn (holders learn their serials in item sync). False when it was not enrolled.
    func removeReader(_ id: ReaderKeyID) throws -> Bool {
        try database.write { db in
            try db.execute(
                sql: "UPDATE reader SET removed = 1 WHERE keyID = ? AND removed = 0", arguments: [id.description])
            guard db.changesCount > 0 else { return false }
            try db.execute(sql: "UPDATE certificate SET withdrawn = 1 WHERE keyID = ?", arguments: [id.description])
            return true
        }
    }

    func reader(_ id: ReaderKeyID) throws -> ReaderRow? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM reader WHERE keyID = ?", arguments: [id.description])
                .flatMap(Self.reader(from:))
        }
    }

    func readers() throws -> [ReaderRow] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM reader ORDER BY createdAt").compactMap(Self.reader(from:))
        }
    }

    private static func reader(from row: Row) -> ReaderRow? {
        guard let id = ReaderKeyID(row["keyID"] as String),
            let key = try? P256.Signing.PublicKey(x963Representation: row["publicKey"] as Data)
        else { return nil }
        return ReaderRow(
            keyID: id, name: row["name"], publicKey: key, createdAt: row["createdAt"], removed: row["removed"],
            readers: readers(from: row["readers"]))
    }

    /// Credential and Aperio changes after `cursor`, oldest first, at most `limit`.
    func readerChanges(after cursor: Int64, limit: Int) throws -> [ReaderChange] {
        try database.read { db in
            let credentials = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM credential WHERE sequence > ? ORDER BY sequence LIMIT ?
                    """, arguments: [cursor, limit]
            ).compactMap { row in
                Self.credential(from: row).map { ReaderChange.credential($0, sequence: row["sequence"]) }
            }
            let aperio = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM item WHERE type = 'aperio' AND sequence > ? ORDER BY sequence LIMIT ?
                    """, arguments: [cursor, limit]
            ).compactMap(Self.item(from:)).map(ReaderChange.aperio)
            return Array((credentials + aperio).sorted { $0.sequence < $1.sequence }.prefix(limit))
        }
    }
}
