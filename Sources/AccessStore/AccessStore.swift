import FoundationEssentials
import Glibc

/// What accessd keeps across restarts, in one SQLite database (WAL) in the state directory:
/// settings changed at run time, and the append-only event journal whose sequence numbers
/// only ever grow (AUTOINCREMENT: a number is never reused, even after retention deletes
/// old events or the process is killed).
public final class AccessStore: Sendable {
    /// One journal entry. `data` is the event's JSON object, as clients receive it.
    public struct Event: Hashable, Sendable {
        public var sequence: Int64
        /// Seconds since 1970 (wall clock, for people; ordering is by `sequence`).
        public var time: Double
        public var kind: String
        public var data: String

        public init(sequence: Int64, time: Double, kind: String, data: String) {
            self.sequence = sequence
            self.time = time
            self.kind = kind
            self.data = data
        }

        init(row: SQLiteRow) throws(SQLiteError) {
            try self.init(sequence: row["sequence"], time: row["time"], kind: row["kind"], data: row["data"])
        }
    }

    public let path: String
    let database: SQLiteDatabase
    /// The key that seals the secrets, or why there is none (`DataKeySource`).
    let dataKey: Result<DataKey, DataKeyError>
    /// Whether the database's secrets are sealed (read as plaintext otherwise: a database from
    /// before sealing, opened with no data key).
    let secretsSealed: Bool
    public let secretsAtRest: SecretsAtRest
    /// Each connection's page cache (`PRAGMA cache_size`, in KiB).
    static let pageCacheKiB = 256

    /// Opens (creating when needed) `directory/accessd.sqlite`. The directory is created
    /// with mode 0700: the database will hold credentials. With a data key, plaintext secrets
    /// from before sealing are sealed now; without one, nothing secret can be stored.
    public init(directory: String, dataKey: Result<DataKey, DataKeyError>) throws {
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        path = directory + "/accessd.sqlite"
        var migrations = SQLiteMigrations()
        migrations.register(
            "v1",
            sql: """
                CREATE TABLE "setting" ("key" TEXT PRIMARY KEY NOT NULL, "value" TEXT NOT NULL);
                CREATE TABLE "event" ("sequence" INTEGER PRIMARY KEY AUTOINCREMENT, "time" DOUBLE NOT NULL,
                  "kind" TEXT NOT NULL, "data" TEXT NOT NULL);
                CREATE INDEX "event_time" ON "event"("time");
                """)
        Self.registerCredentialMigrations(&migrations)
        Self.registerAuditMigration(&migrations)
        database = try SQLiteDatabase(
            path: path, busyTimeoutMilliseconds: 5_000,
            prepare: { db in
                // WAL with synchronous=NORMAL: a commit survives the process being killed (what
                // the journal promises); only a power cut can lose the last commits. FULL would
                // fsync every event.
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                // Deleted credentials' keys are overwritten, not left in free pages.
                try db.execute(sql: "PRAGMA secure_delete = ON")
                // A page cache of 256 KiB per connection, not SQLite's 2 MB: the journal appends
                // and reads recent events, a few pages, and the connections (a writer and a
                // reader) each kept what they touched: 0.6 MB after 1,000 readers' events in the
                // writer alone, growing towards 2 MB each (docs/performance.md, "Many readers").
                try db.execute(sql: "PRAGMA cache_size = \(-Self.pageCacheKiB)")
            },
            migrate: migrations.migrate)
        chmod(path, 0o600)
        // The WAL and shared-memory files hold recent pages, keys included.
        for suffix in ["-wal", "-shm"] { chmod(path + suffix, 0o600) }
        self.dataKey = dataKey
        var secrets = SecretsAtRest(protection: "none", sealed: false, migrated: 0)
        switch dataKey {
        case .success(let key):
            secrets.protection = key.protection.rawValue
            secrets.keyOrigin = key.origin
            if try Self.isSealed(database) {
                if try !Self.keyMatches(database, key: key) {
                    secrets.problem = "the database was sealed with another data key than \(key.origin)"
                }
            } else {
                secrets.migrated = try Self.sealPlaintextSecrets(database, key: key)
            }
            secrets.sealed = true
        case .failure(let problem):
            secrets.problem = problem.description
            secrets.sealed = try Self.isSealed(database)
        }
        secretsSealed = secrets.sealed
        secretsAtRest = secrets
    }

    // MARK: Settings

    public func setting(_ key: String) throws -> String? {
        try database.read { db in
            try db.value(String.self, sql: "SELECT value FROM setting WHERE key = ?", arguments: [key])
        }
    }

    public func setSetting(_ key: String, _ value: String) throws {
        try database.write { db in
            try db.execute(
                sql:
                    "INSERT INTO setting(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                arguments: [key, value])
        }
    }

    public func boolSetting(_ key: String) throws -> Bool? {
        try setting(key).map { $0 == "true" }
    }

    public func setBoolSetting(_ key: String, _ value: Bool) throws {
        try setSetting(key, value ? "true" : "false")
    }

    // MARK: Journal

    /// Appends an event and returns it with its sequence number.
    @discardableResult
    public func append(kind: String, data: String, time: Double) throws -> Event {
        try append([(kind, data, time)])[0]
    }

    /// Appends events in one transaction (all or none), in order, numbered consecutively.
    public func append(_ events: [(kind: String, data: String, time: Double)]) throws -> [Event] {
        try database.write { db in
            try events.map { event in
                try db.execute(
                    sql: "INSERT INTO event(time, kind, data) VALUES (?, ?, ?)",
                    arguments: [event.time, event.kind, event.data])
                return Event(sequence: db.lastInsertedRowID, time: event.time, kind: event.kind, data: event.data)
            }
        }
    }

    /// Events after `sequence` (exclusive), oldest first, optionally only of `kinds`.
    public func events(after sequence: Int64, kinds: Set<String>? = nil, limit: Int = 10_000) throws -> [Event] {
        try database.read { db in
            let rows: [SQLiteRow]
            if let kinds, !kinds.isEmpty {
                let placeholders = Array(repeating: "?", count: kinds.count).joined(separator: ",")
                var arguments: [any SQLiteColumnValue] = [sequence]
                arguments += kinds.sorted() as [any SQLiteColumnValue]
                arguments.append(limit)
                rows = try db.rows(
                    sql: """
                        SELECT sequence, time, kind, data FROM event WHERE sequence > ? AND kind IN (\(placeholders))
                        ORDER BY sequence LIMIT ?
                        """, arguments: arguments)
            } else {
                rows = try db.rows(
                    sql: "SELECT sequence, time, kind, data FROM event WHERE sequence > ? ORDER BY sequence LIMIT ?",
                    arguments: [sequence, limit])
            }
            return try rows.map(Event.init(row:))
        }
    }

    /// The sequence to replay after for the events from `time` on (seconds since the epoch):
    /// the one before the first event at or after it, or the newest when there is none.
    public func sequence(before time: Double) throws -> Int64 {
        let first = try database.read { db in
            try db.value(Int64.self, sql: "SELECT MIN(sequence) FROM event WHERE time >= ?", arguments: [time])
        }
        if let first { return first - 1 }
        return try lastSequence()
    }

    /// The highest sequence number ever given (0 before the first event), deleted events included.
    public func lastSequence() throws -> Int64 {
        try database.read { db in
            let assigned = try db.value(Int64.self, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'event'") ?? 0
            let present = try db.value(Int64.self, sql: "SELECT MAX(sequence) FROM event") ?? 0
            return max(assigned, present)
        }
    }

    /// The oldest sequence still in the journal, or nil when it is empty.
    public func firstSequence() throws -> Int64? {
        try database.read { db in try db.value(Int64.self, sql: "SELECT MIN(sequence) FROM event") }
    }

    /// Retention: keeps at most `maxEvents` events, none older than `maxAge` seconds before `now`.
    /// Returns how many were deleted.
    @discardableResult
    public func prune(maxEvents: Int, maxAge: Double, now: Double) throws -> Int {
        try database.write { db in
            try db.execute(sql: "DELETE FROM event WHERE time < ?", arguments: [now - maxAge])
            var deleted = db.changesCount
            try db.execute(
                sql: """
                    DELETE FROM event WHERE sequence <= (SELECT sequence FROM event ORDER BY sequence DESC LIMIT 1 OFFSET ?)
                    """, arguments: [maxEvents])
            deleted += db.changesCount
            return deleted
        }
    }
}
