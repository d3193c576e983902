import AccessCore
import Foundation
import GRDB
import SiteContract

/// The site's copy of each holder's access events (docs/site-api.md §4.5), one row per
/// credential and sequence: a batch sent again is stored once, and `copies` counts how
/// often each event arrived (what a test of "nothing sent twice" reads).
extension SiteDatabase {
    struct AuditRow: Sendable {
        var credential: String
        var seq: Int64
        var time: Double
        var kind: String
        /// The event's data as the holder sent it (JSON text).
        var data: String
        var copies: Int
        var receivedAt: Double
    }

    static func registerAuditMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v2-audit") { db in
            try db.create(table: "audit_event") { t in
                t.column("credentialID", .text).notNull()
                t.column("seq", .integer).notNull()
                t.column("time", .double).notNull()
                t.column("kind", .text).notNull()
                t.column("data", .text).notNull()
                t.column("copies", .integer).notNull().defaults(to: 1)
                t.column("receivedAt", .double).notNull()
                t.primaryKey(["credentialID", "seq"])
            }
            try db.create(table: "audit_cursor") { t in
                t.primaryKey("credentialID", .text)
                t.column("through", .integer).notNull()
            }
            try db.create(table: "audit_gap") { t in
                t.column("credentialID", .text).notNull()
                t.column("fromSeq", .integer).notNull()
                t.column("toSeq", .integer).notNull()
                t.primaryKey(["credentialID", "fromSeq"])
            }
        }
    }

    /// Stores a batch (each event once) and returns the credential's `through`.
    func recordAudit(_ credential: CredentialID, _ request: AuditUploadRequest, now: Double) throws -> Int64 {
        let id = credential.description
        return try database.write { db in
            for event in request.events {
                let data = String(
                    decoding: (try? JSONEncoder.sorted.encode(event.data)) ?? Data("null".utf8), as: UTF8.self)
                try db.execute(
                    sql: """
                        INSERT INTO audit_event(credentialID, seq, time, kind, data, receivedAt) VALUES (?, ?, ?, ?, ?, ?)
                        ON CONFLICT(credentialID, seq) DO UPDATE SET copies = copies + 1
                        """, arguments: [id, event.seq, event.time, event.kind, data, now])
            }
            if let gap = request.gap {
                try db.execute(
                    sql: "INSERT OR IGNORE INTO audit_gap(credentialID, fromSeq, toSeq) VALUES (?, ?, ?)",
                    arguments: [id, gap.from, gap.to])
            }
            try db.execute(
                sql: """
                    INSERT INTO audit_cursor(credentialID, through) VALUES (?, ?)
                    ON CONFLICT(credentialID) DO UPDATE SET through = MAX(through, excluded.through)
                    """, arguments: [id, request.through])
            return try Int64.fetchOne(
                db, sql: "SELECT through FROM audit_cursor WHERE credentialID = ?", arguments: [id])
                ?? request.through
        }
    }

    /// The events received, oldest first (of one credential when given).
    func auditEvents(of credential: CredentialID? = nil) throws -> [AuditRow] {
        try database.read { db in
            let rows: [Row]
            if let credential {
                rows = try Row.fetchAll(
                    db, sql: "SELECT * FROM audit_event WHERE credentialID = ? ORDER BY seq",
                    arguments: [credential.description])
            } else {
                rows = try Row.fetchAll(db, sql: "SELECT * FROM audit_event ORDER BY credentialID, seq")
            }
            return rows.map { row in
                AuditRow(
                    credential: row["credentialID"], seq: row["seq"], time: row["time"], kind: row["kind"],
                    data: row["data"], copies: row["copies"], receivedAt: row["receivedAt"])
            }
        }
    }
}

extension JSONEncoder {
    static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
