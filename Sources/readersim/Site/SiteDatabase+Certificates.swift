import AccessCore
import Crypto
import Foundation
import GRDB

/// Version 3's controller certificates (docs/reader-protocol.md §1.1, site API §7.3): the
/// site vouches for each enrolled controller's key for the readers its operator named, a
/// day at a time. A provisioning call gets the controller's current certificates; one with
/// less than half its validity left is replaced by a new one (a new serial) first.
extension SiteDatabase {
    static func registerCertificateMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v6-controller-certificates") { db in
            // The readers a controller serves, as 8-hex-digit ids separated by commas.
            try db.alter(table: "reader") { t in t.add(column: "readers", .text).notNull().defaults(to: "") }
            try db.create(table: "certificate") { t in
                t.autoIncrementedPrimaryKey("serial")
                t.column("keyID", .text).notNull().indexed()
                t.column("readers", .text).notNull()
                t.column("validUntil", .double).notNull()
                t.column("encoded", .blob).notNull()
                t.column("withdrawn", .boolean).notNull().defaults(to: false)
            }
        }
    }

    /// The certificates a controller's next page carries, issuing what is due: one per group
    /// of up to 32 of its readers, each with at least half of `validity` left at `now`.
    func certificates(
        for reader: ReaderRow, site: Site, validity: UInt32, now: Double
    ) throws -> [ControllerCertificate] {
        let groups = stride(from: 0, to: reader.readers.count, by: ControllerCertificate.maximumReaders).map {
            Array(reader.readers[$0..<min($0 + ControllerCertificate.maximumReaders, reader.readers.count)])
        }
        return try database.write { db in
            var current: [ControllerCertificate] = []
            for group in groups {
                let text = Self.readerList(group)
                if let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT encoded FROM certificate WHERE keyID = ? AND readers = ? AND withdrawn = 0
                        AND validUntil - ? > ? ORDER BY serial DESC LIMIT 1
                        """, arguments: [reader.keyID.description, text, now, Double(validity) / 2]),
                    let kept = try? ControllerCertificate(decoding: Array(row["encoded"] as Data))
                {
                    current.append(kept)
                    continue
                }
                try db.execute(
                    sql: "INSERT INTO certificate(keyID, readers, validUntil, encoded) VALUES (?, ?, 0, x'')",
                    arguments: [reader.keyID.description, text])
                let serial = db.lastInsertedRowID
                let from = UInt32(clamping: Int64(now.rounded(.down)))
                let issued = try ControllerCertificate.issue(
                    siteKey: site.key, siteTag: site.tag, serial: UInt64(serial), validFrom: from,
                    validUntil: from &+ validity, controllerKey: reader.publicKey, readers: group)
                try db.execute(
                    sql: "UPDATE certificate SET validUntil = ?, encoded = ? WHERE serial = ?",
                    arguments: [Double(issued.validUntil), Data(issued.encoded), serial])
                current.append(issued)
            }
            return current
        }
    }

    /// The serials of withdrawn certificates a holder could still take at `now` (until five
    /// minutes past their end, reader protocol §1.1's clock tolerance), for item sync (§4.2).
    func withdrawnCertificates(now: Double) throws -> [UInt64] {
        try database.read { db in
            try Int64.fetchAll(
                db,
                sql: """
                    SELECT serial FROM certificate WHERE withdrawn = 1 AND validUntil + ? > ?
                    ORDER BY serial LIMIT 1024
                    """, arguments: [Double(ControllerCertificate.clockTolerance), now]
            ).map { UInt64($0) }
        }
    }

    static func readerList(_ readers: [ReaderID]) -> String {
        readers.map(\.description).joined(separator: ",")
    }

    static func readers(from text: String) -> [ReaderID] {
        text.split(separator: ",").compactMap { ReaderID(String($0)) }
    }
}
