internal import CSQLite

/// One connection to a SQLite database, through SQLite's C API. Not thread-safe: its
/// owner (`SQLiteDatabase`) uses it under a lock (hence `@unchecked Sendable`: the lock, not
/// the type, keeps it to one thread at a time).
///
/// Written here rather than through GRDB, which AccessStore used before: GRDB imports the
/// whole of Foundation, and with it ICU's 34 MB of data that nothing in accessd needs
/// (issue #37, docs/performance.md "Package size"). What the store needs of SQLite is
/// small: statements with arguments, rows by column name, transactions, a checkpoint.
final class SQLiteConnection: @unchecked Sendable {
    private let handle: OpaquePointer

    /// Opens `path` read-write, creating it when missing, in SQLite's multi-thread mode (one
    /// thread at a time per connection, which the owner's lock guarantees).
    init(path: String, busyTimeoutMilliseconds: Int32) throws(SQLiteError) {
        var opened: OpaquePointer?
        let code = sqlite3_open_v2(
            path, &opened, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        guard code == SQLITE_OK, let opened else {
            let message = opened.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(opened)
            throw SQLiteError(code: code, message: "cannot open \(path): \(message)")
        }
        handle = opened
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, busyTimeoutMilliseconds)
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    var changesCount: Int { Int(sqlite3_changes(handle)) }

    var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Runs one statement (or, without arguments, several separated by semicolons) to its end.
    func execute(sql: String, arguments: [any SQLiteColumnValue] = []) throws(SQLiteError) {
        if arguments.isEmpty {
            let code = sqlite3_exec(handle, sql, nil, nil, nil)
            guard code == SQLITE_OK else { throw error(code) }
            return
        }
        _ = try rows(sql: sql, arguments: arguments)
    }

    /// Every row of one statement.
    func rows(sql: String, arguments: [any SQLiteColumnValue] = []) throws(SQLiteError) -> [SQLiteRow] {
        var prepared: OpaquePointer?
        let code = sqlite3_prepare_v2(handle, sql, -1, &prepared, nil)
        guard code == SQLITE_OK, let statement = prepared else { throw error(code) }
        defer { sqlite3_finalize(statement) }
        for (offset, argument) in arguments.enumerated() {
            try bind(argument.sqliteValue, at: Int32(offset + 1), in: statement)
        }
        let count = sqlite3_column_count(statement)
        let names = (0..<count).map { String(cString: sqlite3_column_name(statement, $0)) }
        var rows: [SQLiteRow] = []
        while true {
            let step = sqlite3_step(statement)
            if step == SQLITE_DONE { return rows }
            guard step == SQLITE_ROW else { throw error(step) }
            rows.append(SQLiteRow(names: names, values: (0..<count).map { column(statement, $0) }))
        }
    }

    /// The first column of the first row, nil when there is no row or it is NULL.
    func value<T: SQLiteColumnValue>(
        _ type: T.Type = T.self, sql: String, arguments: [any SQLiteColumnValue] = []
    ) throws(SQLiteError) -> T? {
        guard let row = try rows(sql: sql, arguments: arguments).first, let name = row.names.first else { return nil }
        let value: T? = try row[name]
        return value
    }

    /// Copies the write-ahead log into the database and empties it (`PRAGMA wal_checkpoint(TRUNCATE)`).
    func checkpointTruncating() throws(SQLiteError) {
        let code = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_TRUNCATE, nil, nil)
        guard code == SQLITE_OK else { throw error(code) }
    }

    private func bind(_ value: SQLiteValue, at index: Int32, in statement: OpaquePointer) throws(SQLiteError) {
        let code: Int32 =
            switch value {
            case .null: sqlite3_bind_null(statement, index)
            case .integer(let number): sqlite3_bind_int64(statement, index, number)
            case .real(let number): sqlite3_bind_double(statement, index, number)
            case .text(let text): sqlite3_bind_text(statement, index, text, -1, csqlite_transient())
            // A NULL pointer would bind NULL: an empty BLOB is a zero-length one.
            case .blob(let bytes) where bytes.isEmpty: sqlite3_bind_zeroblob(statement, index, 0)
            case .blob(let bytes):
                bytes.withUnsafeBytes {
                    sqlite3_bind_blob(statement, index, $0.baseAddress, Int32($0.count), csqlite_transient())
                }
            }
        guard code == SQLITE_OK else { throw error(code) }
    }

    private func column(_ statement: OpaquePointer, _ index: Int32) -> SQLiteValue {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(statement, index))
        case SQLITE_TEXT:
            let count = Int(sqlite3_column_bytes(statement, index))
            guard let text = sqlite3_column_text(statement, index) else { return .text("") }
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, index))
            guard count > 0, let bytes = sqlite3_column_blob(statement, index) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: count)))
        default: return .null
        }
    }

    private func error(_ code: Int32) -> SQLiteError {
        SQLiteError(code: code, message: String(cString: sqlite3_errmsg(handle)))
    }
}
