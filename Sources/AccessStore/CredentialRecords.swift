import AccessCore
import Crypto
import FoundationEssentials

/// A credential as accessd keeps it: the core's `Credential` plus where its site answers,
/// the sync cursor and the PIN attempt counter.
public struct StoredCredential: Sendable {
    public var credential: Credential
    public var siteName: String
    /// The site's base URL (docs/site-api.md §2).
    public var siteURL: String
    public var deviceName: String
    public var registeredAt: Double
    public var lastSyncAt: Double?
    public var itemCursor: String
    public var failedPinAttempts: Int
    /// Where several sites' readers are in range, a higher priority's reader goes first.
    public var priority: Int
    /// Why the credential's key (or its second factor's outer seal) cannot be used; nil when it
    /// opened and passed its self-test. Such a credential has no signing key: it is never presented.
    public var keyProblem: KeyProblem?
    /// The serials of the site's controller certificates it has withdrawn (reader protocol
    /// §1.1), as the last item sync listed them: refused at every reader.
    public var withdrawnCertificates: Set<UInt64> = []

    public init(
        credential: Credential, siteName: String, siteURL: String, deviceName: String, registeredAt: Double,
        lastSyncAt: Double? = nil, itemCursor: String = "0", failedPinAttempts: Int = 0, priority: Int = 0,
        keyProblem: KeyProblem? = nil
    ) {
        self.keyProblem = keyProblem
        self.priority = priority
        self.credential = credential
        self.siteName = siteName
        self.siteURL = siteURL
        self.deviceName = deviceName
        self.registeredAt = registeredAt
        self.lastSyncAt = lastSyncAt
        self.itemCursor = itemCursor
        self.failedPinAttempts = failedPinAttempts
    }
}

/// An item a site pushed to a credential (docs/site-api.md §4.2).
public struct StoredItem: Sendable, Hashable {
    public var id: String
    public var credentialID: CredentialID
    public var type: String
    public var name: String
    public var state: CredentialState
    /// Aperio items: the lock site and the lock credential.
    public var siteTag: SiteTag?
    public var aperioIdentifier: [UInt8]?
    public var aperioKey: [UInt8]?
    /// Other items: their `data` object as JSON text.
    public var data: String?
    /// Why an Aperio item's key cannot be used (then `aperioKey` is nil).
    public var keyProblem: KeyProblem?
    /// The validity window (Unix seconds): outside it the item is not presented.
    public var validFrom: Double?
    public var validUntil: Double?

    public func isValid(at time: Double) -> Bool {
        ValidityWindow(from: validFrom, until: validUntil).contains(time)
    }

    public init(
        id: String, credentialID: CredentialID, type: String, name: String, state: CredentialState,
        siteTag: SiteTag? = nil, aperioIdentifier: [UInt8]? = nil, aperioKey: [UInt8]? = nil, data: String? = nil,
        validFrom: Double? = nil, validUntil: Double? = nil
    ) {
        self.validFrom = validFrom
        self.validUntil = validUntil
        self.id = id
        self.credentialID = credentialID
        self.type = type
        self.name = name
        self.state = state
        self.siteTag = siteTag
        self.aperioIdentifier = aperioIdentifier
        self.aperioKey = aperioKey
        self.data = data
    }

    /// The Aperio credential this item carries, when it is one.
    public var aperioSecret: AperioSecret? {
        guard type == "aperio", let aperioIdentifier, let aperioKey else { return nil }
        return AperioSecret(identifier: aperioIdentifier, key: aperioKey)
    }
}

extension AccessStore {
    static func registerCredentialMigrations(_ migrations: inout SQLiteMigrations) {
        migrations.register(
            "v2-credentials",
            sql: """
                CREATE TABLE "credential" ("id" TEXT PRIMARY KEY NOT NULL, "siteName" TEXT NOT NULL,
                  "siteTag" INTEGER NOT NULL, "sitePublicKey" BLOB NOT NULL, "siteURL" TEXT NOT NULL,
                  "cardholder" TEXT NOT NULL, "deviceName" TEXT NOT NULL, "state" TEXT NOT NULL,
                  "secondFactor" BOOLEAN NOT NULL, "signingKey" BLOB NOT NULL, "sealedSecondFactor" BLOB,
                  "failedPinAttempts" INTEGER NOT NULL DEFAULT 0, "registeredAt" DOUBLE NOT NULL,
                  "lastSyncAt" DOUBLE, "itemCursor" TEXT NOT NULL DEFAULT '0');
                CREATE TABLE "item" ("credentialID" TEXT NOT NULL REFERENCES "credential"("id") ON DELETE CASCADE,
                  "id" TEXT NOT NULL, "type" TEXT NOT NULL, "name" TEXT NOT NULL, "state" TEXT NOT NULL,
                  "siteTag" INTEGER, "aperioIdentifier" BLOB, "aperioKey" BLOB, "data" TEXT,
                  PRIMARY KEY ("credentialID", "id"));
                """)
        migrations.register(
            "v3-credential-priority",
            sql: #"ALTER TABLE "credential" ADD COLUMN "priority" INTEGER NOT NULL DEFAULT 0"#)
        migrations.register(
            "v4-item-validity",
            sql: #"""
                ALTER TABLE "item" ADD COLUMN "validFrom" DOUBLE;
                ALTER TABLE "item" ADD COLUMN "validUntil" DOUBLE;
                """#)
        // Decimal serials, space-separated: a short list (certificates live a week at most) read
        // only with its credential.
        migrations.register(
            "v6-withdrawn-certificates",
            sql: #"ALTER TABLE "credential" ADD COLUMN "withdrawnCertificates" TEXT NOT NULL DEFAULT ''"#)
    }

    // MARK: Credentials

    public func credentials() throws -> [StoredCredential] {
        try database.read { db in
            try db.rows(sql: "SELECT * FROM credential ORDER BY registeredAt").compactMap(
                credential(from:))
        }
    }

    public func insertCredential(_ stored: StoredCredential) throws {
        let c = stored.credential
        let id = c.id.description
        let signingKey = try c.signingKey.map {
            try sealSecret($0.rawRepresentation, place: SealedColumn.signingKey(id))
        }
        let secondFactor = try c.sealedSecondFactor.map {
            try sealSecret(Data($0.encoded), place: SealedColumn.secondFactor(id))
        }
        try database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO credential(id, siteName, siteTag, sitePublicKey, siteURL, cardholder, deviceName, state,
                      secondFactor, signingKey, sealedSecondFactor, failedPinAttempts, registeredAt, lastSyncAt, itemCursor, priority)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    c.id.description, stored.siteName, Int64(c.siteTag.rawValue), c.sitePublicKey.x963Representation,
                    stored.siteURL, c.cardholderName, stored.deviceName, c.state.rawValue, c.secondFactorEnabled,
                    signingKey ?? Data(), secondFactor,
                    stored.failedPinAttempts, stored.registeredAt, stored.lastSyncAt, stored.itemCursor,
                    stored.priority,
                ])
            try Self.startAuditCursor(db, credential: c.id.description)
        }
    }

    /// Deletes a credential and its items; false when there was none.
    public func deleteCredential(_ id: CredentialID) throws -> Bool {
        let deleted = try database.write { db in
            try db.execute(sql: "DELETE FROM item WHERE credentialID = ?", arguments: [id.description])
            try db.execute(sql: "DELETE FROM audit_cursor WHERE credentialID = ?", arguments: [id.description])
            try db.execute(sql: "DELETE FROM credential WHERE id = ?", arguments: [id.description])
            return db.changesCount > 0
        }
        // secure_delete overwrites the key in the database's pages, but the write-ahead log
        // still held the frames that wrote it (until a clean stop checkpointed them): a
        // SIGKILL after a delete left the key bytes on disk (issue #17). A truncating
        // checkpoint copies the overwritten pages in and empties the log.
        if deleted {
            try database.writeWithoutTransaction { db in try db.checkpointTruncating() }
        }
        return deleted
    }

    public func setCredentialState(_ id: CredentialID, _ state: CredentialState) throws {
        try database.write { db in
            try db.execute(
                sql: "UPDATE credential SET state = ? WHERE id = ?", arguments: [state.rawValue, id.description])
        }
    }

    /// A new PIN: the second-factor key sealed again. The old sealing is checkpointed out of the
    /// write-ahead log, as a deleted key is.
    /// False when there is no such credential (deleted meanwhile): nothing was stored.
    public func setSealedSecondFactor(_ id: CredentialID, _ sealed: SealedSecondFactorKey) throws -> Bool {
        let stored = try sealSecret(Data(sealed.encoded), place: SealedColumn.secondFactor(id.description))
        let changed = try database.write { db in
            try db.execute(
                sql: "UPDATE credential SET sealedSecondFactor = ?, failedPinAttempts = 0 WHERE id = ?",
                arguments: [stored, id.description])
            return db.changesCount > 0
        }
        try database.writeWithoutTransaction { db in try db.checkpointTruncating() }
        return changed
    }

    public func setCredentialPriority(_ id: CredentialID, _ priority: Int) throws {
        try database.write { db in
            try db.execute(
                sql: "UPDATE credential SET priority = ? WHERE id = ?", arguments: [priority, id.description])
        }
    }

    public func setFailedPinAttempts(_ id: CredentialID, _ count: Int) throws {
        try database.write { db in
            try db.execute(
                sql: "UPDATE credential SET failedPinAttempts = ? WHERE id = ?", arguments: [count, id.description])
        }
    }

    private func credential(from row: SQLiteRow) throws -> StoredCredential? {
        // The places are the row's own text: what the sealing (at insert or migration) used.
        let rowID: String = try row["id"]
        guard let id = CredentialID(rowID),
            let sitePublicKey = try? P256.Signing.PublicKey(x963Representation: row["sitePublicKey"] as Data),
            let state = CredentialState(rawValue: try row["state"])
        else { return nil }
        var keyProblem: KeyProblem?
        var signingKey: P256.Signing.PrivateKey?
        let storedKey: Data = try row["signingKey"]
        if !storedKey.isEmpty {
            switch openSecret(storedKey, place: SealedColumn.signingKey(rowID)) {
            case .failure(let problem): keyProblem = problem
            case .success(let raw):
                signingKey = try? P256.Signing.PrivateKey(rawRepresentation: raw)
                if signingKey.map(Self.passesSelfTest) != true {
                    signingKey = nil
                    keyProblem = .selfTestFailed
                }
            }
        }
        var sealed: SealedSecondFactorKey?
        if let storedSecondFactor = try row["sealedSecondFactor"] as Data? {
            switch openSecret(storedSecondFactor, place: SealedColumn.secondFactor(rowID)) {
            case .failure(let problem): keyProblem = keyProblem ?? problem
            case .success(let encoded): sealed = try? SealedSecondFactorKey(encoded: Array(encoded))
            }
        }
        if keyProblem != nil { signingKey = nil }
        let credential = try Credential(
            id: id, siteTag: SiteTag(UInt32(truncatingIfNeeded: row["siteTag"] as Int64)),
            cardholderName: row["cardholder"],
            kind: .mobile, state: state, sitePublicKey: sitePublicKey, signingKey: signingKey,
            sealedSecondFactor: sealed, secondFactorEnabled: row["secondFactor"])
        var stored = try StoredCredential(
            credential: credential, siteName: row["siteName"], siteURL: row["siteURL"],
            deviceName: row["deviceName"], registeredAt: row["registeredAt"],
            lastSyncAt: row["lastSyncAt"], itemCursor: row["itemCursor"],
            failedPinAttempts: row["failedPinAttempts"], priority: row["priority"], keyProblem: keyProblem)
        let withdrawn: String = try row["withdrawnCertificates"]
        stored.withdrawnCertificates = Set(withdrawn.split(separator: " ").compactMap { UInt64($0) })
        return stored
    }

    /// A key that opened is used only if it signs a fixed message and its public key verifies it.
    static func passesSelfTest(_ key: P256.Signing.PrivateKey) -> Bool {
        let message = Data("accessd key self-test".utf8)
        guard let signature = try? key.signature(for: message) else { return false }
        return key.publicKey.isValidSignature(signature, for: message)
    }

    // MARK: Items

    public func items(of credential: CredentialID? = nil) throws -> [StoredItem] {
        try database.read { db in
            let rows =
                if let credential {
                    try db.rows(
                        sql: "SELECT * FROM item WHERE credentialID = ? ORDER BY id",
                        arguments: [credential.description])
                } else {
                    try db.rows(sql: "SELECT * FROM item ORDER BY credentialID, id")
                }
            return try rows.compactMap { row throws(SQLiteError) -> StoredItem? in
                let credentialRow: String = try row["credentialID"]
                guard let credential = CredentialID(credentialRow),
                    let state = CredentialState(rawValue: try row["state"])
                else { return nil }
                let id: String = try row["id"]
                var aperioKey: [UInt8]?
                var keyProblem: KeyProblem?
                if let stored = try row["aperioKey"] as Data? {
                    switch openSecret(stored, place: SealedColumn.aperioKey(credentialRow, id)) {
                    case .success(let key): aperioKey = Array(key)
                    case .failure(let problem): keyProblem = problem
                    }
                }
                var item = try StoredItem(
                    id: id, credentialID: credential, type: row["type"], name: row["name"], state: state,
                    siteTag: (row["siteTag"] as Int64?).map { SiteTag(UInt32(truncatingIfNeeded: $0)) },
                    aperioIdentifier: (row["aperioIdentifier"] as Data?).map(Array.init),
                    aperioKey: aperioKey, data: row["data"],
                    validFrom: row["validFrom"], validUntil: row["validUntil"])
                item.keyProblem = keyProblem
                return item
            }
        }
    }

    /// Applies one sync answer in one transaction: the items, the removals and the new
    /// cursor land together or not at all, so an interrupted sync is simply redone.
    ///
    /// A removed item, or an Aperio key replaced, leaves the old key in the write-ahead log's
    /// frames (secure_delete overwrites only the database's pages) until a checkpoint: it
    /// stayed there for good after a SIGKILL (issue #32). Such a sync is checkpointed out of
    /// the log at once, as a deleted credential is.
    /// `withdrawnCertificates`: the site's list as the page gave it (it replaces the one
    /// stored); nil from a site that sends none, which leaves the stored list as it is.
    public func applyItemSync(
        credential: CredentialID, upserted: [StoredItem], removed: [String], cursor: String,
        withdrawnCertificates: Set<UInt64>? = nil, at time: Double
    ) throws {
        try writeItemSync(
            credential: credential, upserted: upserted, removed: removed, cursor: cursor,
            withdrawnCertificates: withdrawnCertificates, at: time)
        if !removed.isEmpty || upserted.contains(where: { $0.aperioKey != nil }) {
            try database.writeWithoutTransaction { db in try db.checkpointTruncating() }
        }
    }

    private func writeItemSync(
        credential: CredentialID, upserted: [StoredItem], removed: [String], cursor: String,
        withdrawnCertificates: Set<UInt64>?, at time: Double
    ) throws {
        let sealedKeys = try upserted.map { item in
            try item.aperioKey.map {
                try sealSecret(Data($0), place: SealedColumn.aperioKey(credential.description, item.id))
            }
        }
        try database.write { db in
            for (item, sealedKey) in zip(upserted, sealedKeys) {
                try db.execute(
                    sql: """
                        INSERT INTO item(credentialID, id, type, name, state, siteTag, aperioIdentifier, aperioKey, data,
                          validFrom, validUntil)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT(credentialID, id) DO UPDATE SET type = excluded.type, name = excluded.name,
                          state = excluded.state, siteTag = excluded.siteTag, aperioIdentifier = excluded.aperioIdentifier,
                          aperioKey = excluded.aperioKey, data = excluded.data, validFrom = excluded.validFrom,
                          validUntil = excluded.validUntil
                        """,
                    arguments: [
                        credential.description, item.id, item.type, item.name, item.state.rawValue,
                        item.siteTag.map { Int64($0.rawValue) }, item.aperioIdentifier.map { Data($0) },
                        sealedKey, item.data, item.validFrom, item.validUntil,
                    ])
            }
            for id in removed {
                try db.execute(
                    sql: "DELETE FROM item WHERE credentialID = ? AND id = ?", arguments: [credential.description, id])
            }
            try db.execute(
                sql: "UPDATE credential SET itemCursor = ?, lastSyncAt = ? WHERE id = ?",
                arguments: [cursor, time, credential.description])
            if let withdrawnCertificates {
                try db.execute(
                    sql: "UPDATE credential SET withdrawnCertificates = ? WHERE id = ?",
                    arguments: [
                        withdrawnCertificates.sorted().map(String.init).joined(separator: " "),
                        credential.description,
                    ])
            }
        }
    }
}
