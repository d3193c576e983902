import AccessCore
import Crypto
import Foundation
import GRDB
import Testing

@testable import AccessStore

@Suite("Store", .timeLimit(.minutes(5)))
struct AccessStoreTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("accessd-store-\(UUID().uuidString)")
        .path

    @Test func settingsPersistAcrossReopening() throws {
        do {
            let store = try AccessStore(directory: directory, dataKey: .success(.forTests))
            #expect(try store.boolSetting("scanning") == nil)
            try store.setBoolSetting("scanning", false)
            try store.setBoolSetting("scanning", true)
            try store.setSetting("logLevel", "debug")
        }
        let reopened = try AccessStore(directory: directory, dataKey: .success(.forTests))
        #expect(try reopened.boolSetting("scanning") == true)
        #expect(try reopened.setting("logLevel") == "debug")
        let attributes = try FileManager.default.attributesOfItem(atPath: directory)
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
        let file = try FileManager.default.attributesOfItem(atPath: reopened.path)
        #expect((file[.posixPermissions] as? Int) == 0o600)
    }

    /// Both connections, the writer's and the reader's, keep a small page cache
    /// (AccessStore.pageCacheKiB), not SQLite's 2 MB default.
    @Test func everyConnectionKeepsASmallPageCache() throws {
        let store = try AccessStore(directory: directory, dataKey: .success(.forTests))
        let expected = -AccessStore.pageCacheKiB
        #expect(try store.database.write { try $0.value(Int.self, sql: "PRAGMA cache_size") } == expected)
        #expect(try store.database.read { try $0.value(Int.self, sql: "PRAGMA cache_size") } == expected)
    }

    @Test func journalSequencesGrowAndReplay() throws {
        let store = try AccessStore(directory: directory, dataKey: .success(.forTests))
        var sequences: [Int64] = []
        for index in 0..<10 {
            sequences.append(
                try store.append(
                    kind: index % 2 == 0 ? "reader.updated" : "sdk.state",
                    data: "{\"i\":\(index)}", time: Double(index)
                ).sequence)
        }
        #expect(sequences == Array(1...10))
        #expect(try store.events(after: 7).map(\.sequence) == [8, 9, 10])
        #expect(try store.events(after: 0, kinds: ["sdk.state"]).map(\.sequence) == [2, 4, 6, 8, 10])
        #expect(try store.events(after: 0, limit: 3).map(\.data) == ["{\"i\":0}", "{\"i\":1}", "{\"i\":2}"])
    }

    @Test func retentionNeverReusesSequenceNumbers() throws {
        do {
            let store = try AccessStore(directory: directory, dataKey: .success(.forTests))
            for index in 0..<20 { try store.append(kind: "k", data: "{}", time: Double(index)) }
            // Older than 5 s before t = 20 goes (times 0…14).
            #expect(try store.prune(maxEvents: 8, maxAge: 5, now: 20) == 15)
            #expect(try store.firstSequence() == 16)
            // Then at most 3 remain, the newest.
            #expect(try store.prune(maxEvents: 3, maxAge: 100, now: 20) == 2)
            #expect(try store.events(after: 0).map(\.sequence) == [18, 19, 20])
            #expect(try store.prune(maxEvents: 0, maxAge: 100, now: 20) == 3)
            #expect(try store.firstSequence() == nil)
        }
        let reopened = try AccessStore(directory: directory, dataKey: .success(.forTests))
        #expect(try reopened.lastSequence() == 20)
        #expect(try reopened.append(kind: "k", data: "{}", time: 21).sequence == 21)
    }

    /// Issue #17: a deleted credential's key stayed in accessd.sqlite-wal until a clean stop
    /// (a SIGKILL after the delete left it on disk). Read while the store is still open, as
    /// after a SIGKILL: neither file holds the key.
    @Test func aDeletedKeyIsGoneFromTheDatabaseAndItsLog() throws {
        let store = try AccessStore(directory: directory, dataKey: .success(.forTests))
        let key = P256.Signing.PrivateKey()
        let id = try store.insertTestCredential(byte: 7, key: key)
        // The key is sealed (issue #32): what must not linger is the sealed value, which the
        // data key would open.
        let secret = try store.storedSecret("SELECT signingKey FROM credential WHERE id = ?", id.description)
        func onDisk() -> Bool {
            [store.path, store.path + "-wal"].contains { path in
                guard let bytes = FileManager.default.contents(atPath: path) else { return false }
                return [UInt8](bytes).firstRange(of: secret) != nil
            }
        }
        #expect(onDisk(), "the key is written at all (else this test proves nothing)")
        #expect(try store.deleteCredential(id))
        #expect(!onDisk())
    }

    /// Issue #32: an Aperio lock key removed by a sync stayed in accessd.sqlite-wal (no
    /// checkpoint after that delete), and so did a key a sync replaced.
    @Test(arguments: [false, true]) func anAperioKeyASyncRemovesIsGoneFromTheDatabaseAndItsLog(replaced: Bool) throws {
        let store = try AccessStore(directory: directory, dataKey: .success(.forTests))
        let id = try store.insertTestCredential(byte: 9)
        var generator = SystemRandomNumberGenerator()
        func lockKey() -> [UInt8] { (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) } }
        func item(_ key: [UInt8]) -> StoredItem {
            StoredItem(
                id: "lock-1", credentialID: id, type: "aperio", name: "Store room", state: .active,
                siteTag: SiteTag(0x2A), aperioIdentifier: [1, 2, 3, 4], aperioKey: key)
        }
        try store.applyItemSync(credential: id, upserted: [item(lockKey())], removed: [], cursor: "1", at: 0)
        let secret = try store.storedSecret("SELECT aperioKey FROM item WHERE id = ?", "lock-1")
        func onDisk() -> Bool {
            [store.path, store.path + "-wal"].contains { path in
                guard let bytes = FileManager.default.contents(atPath: path) else { return false }
                return [UInt8](bytes).firstRange(of: secret) != nil
            }
        }
        #expect(onDisk(), "the key is written at all (else this test proves nothing)")
        if replaced {
            try store.applyItemSync(credential: id, upserted: [item(lockKey())], removed: [], cursor: "2", at: 1)
        } else {
            try store.applyItemSync(credential: id, upserted: [], removed: ["lock-1"], cursor: "2", at: 1)
        }
        #expect(!onDisk())
    }

    /// The site's withdrawn controller certificates (site API §4.2) are kept with the
    /// credential across a restart; a page without the list leaves it, one with it replaces it.
    @Test func withdrawnCertificatesSurviveReopeningAndFollowTheSite() throws {
        let id: CredentialID
        do {
            let store = try AccessStore(directory: directory, dataKey: .success(.forTests))
            id = try store.insertTestCredential(byte: 5)
            #expect(try store.credentials().first?.withdrawnCertificates == [])
            try store.applyItemSync(
                credential: id, upserted: [], removed: [], cursor: "1", withdrawnCertificates: [3, UInt64.max], at: 0)
            try store.applyItemSync(credential: id, upserted: [], removed: [], cursor: "2", at: 1)
        }
        let reopened = try AccessStore(directory: directory, dataKey: .success(.forTests))
        #expect(try reopened.credentials().first?.withdrawnCertificates == [3, UInt64.max])
        try reopened.applyItemSync(
            credential: id, upserted: [], removed: [], cursor: "3", withdrawnCertificates: [], at: 2)
        #expect(try reopened.credentials().first?.withdrawnCertificates == [])
    }
}
