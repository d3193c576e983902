import Synchronization

/// A SQLite database in WAL mode, as accessd's store uses it: one connection that writes and
/// one that reads, each behind its own lock, so a reader (an event replay) never waits for
/// a writer (the journal) and the other way round. Reads see one snapshot each (a deferred
/// transaction); writes are immediate transactions, all or nothing.
final class SQLiteDatabase: Sendable {
    private let writer: Mutex<SQLiteConnection>
    private let reader: Mutex<SQLiteConnection>

    /// `prepare` runs on each connection when it opens (pragmas); `migrate` once on the
    /// writer, after WAL mode is set and before the reader opens.
    init(
        path: String, busyTimeoutMilliseconds: Int32, prepare: (SQLiteConnection) throws -> Void,
        migrate: (SQLiteConnection) throws -> Void
    ) throws {
        let writing = try SQLiteConnection(path: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        try writing.execute(sql: "PRAGMA journal_mode = WAL")
        try Self.setUp(writing, prepare)
        try migrate(writing)
        let reading = try SQLiteConnection(path: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        try Self.setUp(reading, prepare)
        // The reader only reads: a mistake that writes through it fails instead.
        try reading.execute(sql: "PRAGMA query_only = 1")
        writer = Mutex(writing)
        reader = Mutex(reading)
    }

    private static func setUp(_ connection: SQLiteConnection, _ prepare: (SQLiteConnection) throws -> Void) throws {
        // What GRDB set on every connection, which the schema's ON DELETE CASCADE assumes.
        try connection.execute(sql: "PRAGMA foreign_keys = ON")
        try prepare(connection)
    }

    func read<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try reader.withLock { connection in
            try Self.inTransaction(connection, "BEGIN DEFERRED", body)
        }
    }

    func write<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try writer.withLock { connection in
            try Self.inTransaction(connection, "BEGIN IMMEDIATE", body)
        }
    }

    /// On the writer, outside any transaction: a checkpoint, VACUUM.
    func writeWithoutTransaction<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try writer.withLock { connection in try body(connection) }
    }

    private static func inTransaction<T>(
        _ connection: SQLiteConnection, _ begin: String, _ body: (SQLiteConnection) throws -> T
    ) throws -> T {
        try connection.execute(sql: begin)
        do {
            let result = try body(connection)
            try connection.execute(sql: "COMMIT")
            return result
        } catch {
            try? connection.execute(sql: "ROLLBACK")
            throw error
        }
    }
}
