import FoundationEssentials

/// One value of a column or a bound argument, as SQLite stores it.
enum SQLiteValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

/// A Swift type a column is read as and an argument is bound from. The same storage as
/// GRDB gave each (accessd's databases from before keep working): Bool as 0 or 1, Data as
/// a BLOB.
protocol SQLiteColumnValue {
    var sqliteValue: SQLiteValue { get }
    /// nil when the stored value is not one of this type.
    init?(sqliteValue: SQLiteValue)
}

extension String: SQLiteColumnValue {
    var sqliteValue: SQLiteValue { .text(self) }
    init?(sqliteValue: SQLiteValue) {
        guard case .text(let text) = sqliteValue else { return nil }
        self = text
    }
}

extension Int64: SQLiteColumnValue {
    var sqliteValue: SQLiteValue { .integer(self) }
    init?(sqliteValue: SQLiteValue) {
        guard case .integer(let number) = sqliteValue else { return nil }
        self = number
    }
}

extension Int: SQLiteColumnValue {
    var sqliteValue: SQLiteValue { .integer(Int64(self)) }
    init?(sqliteValue: SQLiteValue) {
        guard let number = Int64(sqliteValue: sqliteValue) else { return nil }
        self.init(number)
    }
}

extension Double: SQLiteColumnValue {
    var sqliteValue: SQLiteValue { .real(self) }
    init?(sqliteValue: SQLiteValue) {
        switch sqliteValue {
        case .real(let number): self = number
        // A REAL column keeps a whole number as an integer where that loses nothing.
        case .integer(let number): self = Double(number)
        default: return nil
        }
    }
}

extension Bool: SQLiteColumnValue {
    var sqliteValue: SQLiteValue { .integer(self ? 1 : 0) }
    init?(sqliteValue: SQLiteValue) {
        guard case .integer(let number) = sqliteValue else { return nil }
        self = number != 0
    }
}

extension Data: SQLiteColumnValue {
    var sqliteValue: SQLiteValue { .blob(Array(self)) }
    init?(sqliteValue: SQLiteValue) {
        guard case .blob(let bytes) = sqliteValue else { return nil }
        self.init(bytes)
    }
}

extension Optional: SQLiteColumnValue where Wrapped: SQLiteColumnValue {
    var sqliteValue: SQLiteValue { map(\.sqliteValue) ?? .null }
    init?(sqliteValue: SQLiteValue) {
        if case .null = sqliteValue {
            self = .none
            return
        }
        guard let value = Wrapped(sqliteValue: sqliteValue) else { return nil }
        self = .some(value)
    }
}

/// One row of a result, its columns by name.
struct SQLiteRow: Sendable {
    let names: [String]
    let values: [SQLiteValue]

    /// The column `name` as `T`; an error when there is no such column or its value is not
    /// a `T` (NULL is a value only of an optional).
    subscript<T: SQLiteColumnValue>(_ name: String) -> T {
        get throws(SQLiteError) {
            guard let index = names.firstIndex(of: name) else {
                throw SQLiteError(code: -1, message: "no column \(name) in the result")
            }
            guard let value = T(sqliteValue: values[index]) else {
                throw SQLiteError(code: -1, message: "column \(name) holds \(values[index]), not a \(T.self)")
            }
            return value
        }
    }
}

struct SQLiteError: Error, CustomStringConvertible {
    /// SQLite's result code (-1: a value of the wrong type, found here).
    var code: Int32
    var message: String

    var description: String { "SQLite: \(message) (\(code))" }
}
