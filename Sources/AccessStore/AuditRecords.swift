/// The audit upload's side of the store (docs/site-api.md §4.5): per credential, the journal
/// sequence up to which the site has acknowledged its events, and the journal read by
/// credential. The cursor lives beside the credential and goes with it.
extension AccessStore {
    /// A batch to send: the credential's events after the cursor, and how far the journal
    /// was read to find them (the batch's `through`).
    public struct AuditBatch: Sendable, Equatable {
        public var events: [Event]
        /// Every event of the credential up to this sequence is in `events` or was sent before.
        public var through: Int64
        /// The oldest sequence the journal still keeps, or nil when it is empty.
        public var oldestKept: Int64?

        public init(events: [Event], through: Int64, oldestKept: Int64?) {
            self.events = events
            self.through = through
            self.oldestKept = oldestKept
        }
    }

    static func registerAuditMigration(_ migrations: inout SQLiteMigrations) {
        // Credentials held before the upgrade start at the journal's end: their older events
        // predate the upload and are not sent (docs/site-api.md §4.5).
        migrations.register(
            "v5-audit-cursor",
            sql: """
                CREATE TABLE "audit_cursor" ("credentialID" TEXT PRIMARY KEY NOT NULL
                  REFERENCES "credential"("id") ON DELETE CASCADE, "through" INTEGER NOT NULL);
                INSERT INTO audit_cursor(credentialID, through)
                SELECT id, (SELECT IFNULL(MAX(sequence), 0) FROM event) FROM credential;
                """)
    }

    /// Called in the transaction that inserts a credential: its upload starts at the
    /// journal's end (no earlier event can be its own).
    static func startAuditCursor(_ db: SQLiteConnection, credential: String) throws {
        try db.execute(
            sql: """
                INSERT INTO audit_cursor(credentialID, through)
                VALUES (?, MAX((SELECT IFNULL(MAX(seq), 0) FROM sqlite_sequence WHERE name = 'event'),
                               (SELECT IFNULL(MAX(sequence), 0) FROM event)))
                ON CONFLICT(credentialID) DO NOTHING
                """, arguments: [credential])
    }

    /// The sequence up to which the site acknowledged the credential's events (nil: no such credential).
    public func auditCursor(_ credential: String) throws -> Int64? {
        try database.read { db in
            try db.value(
                Int64.self, sql: "SELECT through FROM audit_cursor WHERE credentialID = ?", arguments: [credential])
        }
    }

    /// Moves the cursor forward (never back): the site acknowledged up to `through`.
    public func setAuditCursor(_ credential: String, through: Int64) throws {
        try database.write { db in
            try db.execute(
                sql: "UPDATE audit_cursor SET through = MAX(through, ?) WHERE credentialID = ?",
                arguments: [through, credential])
        }
    }

    /// Up to `limit` of the credential's events of `kinds` after `cursor`, read in one
    /// snapshot with the journal's end, so nothing appended meanwhile is passed over.
    public func auditBatch(_ credential: String, after cursor: Int64, kinds: Set<String>, limit: Int) throws
        -> AuditBatch
    {
        try database.read { db in
            let rows = try db.rows(
                sql: Self.auditQuery("sequence, time, kind, data", kinds) + " ORDER BY sequence LIMIT ?",
                arguments: Self.auditArguments(credential, cursor, kinds) + [limit])
            let events = try rows.map(Event.init(row:))
            let end = try db.value(Int64.self, sql: "SELECT MAX(sequence) FROM event") ?? cursor
            let through = events.count == limit ? events[events.count - 1].sequence : max(cursor, end)
            let oldest = try db.value(Int64.self, sql: "SELECT MIN(sequence) FROM event")
            return AuditBatch(events: events, through: through, oldestKept: oldest)
        }
    }

    /// How many of the credential's events of `kinds` come after `cursor` (the backlog).
    public func auditBacklog(_ credential: String, after cursor: Int64, kinds: Set<String>) throws -> Int {
        try database.read { db in
            try db.value(
                Int.self, sql: Self.auditQuery("COUNT(*)", kinds),
                arguments: Self.auditArguments(credential, cursor, kinds))
                ?? 0
        }
    }

    // The journal keeps each event's data as the JSON the socket sends; the credential an
    // event concerns is its `credential` member (SQLite's JSON functions, built in since 3.38).
    private static func auditQuery(_ columns: String, _ kinds: Set<String>) -> String {
        let placeholders = Array(repeating: "?", count: kinds.count).joined(separator: ",")
        return """
            SELECT \(columns) FROM event WHERE sequence > ? AND kind IN (\(placeholders))
              AND json_valid(data) AND json_extract(data, '$.credential') = ?
            """
    }

    private static func auditArguments(_ credential: String, _ cursor: Int64, _ kinds: Set<String>)
        -> [any SQLiteColumnValue]
    {
        var values: [any SQLiteColumnValue] = [cursor]
        values += kinds.sorted() as [any SQLiteColumnValue]
        values.append(credential)
        return values
    }
}
