/// The store's schema, step by step: each migration runs once, in order, in a transaction of
/// its own, and is recorded by its identifier. The record is GRDB's table,
/// `grdb_migrations(identifier)`, because the databases accessd made while it used GRDB
/// already list their migrations there.
struct SQLiteMigrations {
    private var steps: [(identifier: String, sql: String)] = []

    mutating func register(_ identifier: String, sql: String) {
        steps.append((identifier, sql))
    }

    func migrate(_ connection: SQLiteConnection) throws {
        try connection.execute(sql: "CREATE TABLE IF NOT EXISTS grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
        let applied = Set(
            try connection.rows(sql: "SELECT identifier FROM grdb_migrations").map { row throws(SQLiteError) in
                let identifier: String = try row["identifier"]
                return identifier
            })
        for step in steps where !applied.contains(step.identifier) {
            try connection.execute(sql: "BEGIN IMMEDIATE")
            do {
                try connection.execute(sql: step.sql)
                try connection.execute(
                    sql: "INSERT INTO grdb_migrations(identifier) VALUES (?)", arguments: [step.identifier])
                try connection.execute(sql: "COMMIT")
            } catch {
                try? connection.execute(sql: "ROLLBACK")
                throw error
            }
        }
    }
}
