import AccessCore
import Crypto
import Foundation
import Testing

@testable import AccessStore

/// The audit upload's cursor and journal reads (docs/site-api.md §4.5).
@Suite("Store: audit cursor", .timeLimit(.minutes(5)))
struct AuditRecordsTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("accessd-audit-\(UUID().uuidString)")
        .path
    static let kinds: Set<String> = ["access.completed", "secondFactor.required"]

    private func insert(_ store: AccessStore, byte: UInt8) throws -> String {
        try store.insertTestCredential(byte: byte).description
    }

    private func decision(_ store: AccessStore, _ credential: String) throws -> Int64 {
        try store.append(
            kind: "access.completed", data: #"{"credential":"\#(credential)","outcome":"granted"}"#, time: 1
        ).sequence
    }

    @Test func aCredentialsEventsAreReadAfterItsCursorOnly() throws {
        let store = try AccessStore(directory: directory, dataKey: .success(.forTests))
        try store.append(kind: "access.completed", data: #"{"credential":"before"}"#, time: 0)
        let ada = try insert(store, byte: 1)
        let bob = try insert(store, byte: 2)
        // A credential starts at the journal's end: nothing before it is its own.
        #expect(try store.auditCursor(ada) == 1)
        let first = try decision(store, ada)
        try store.append(kind: "reader.updated", data: #"{"credential":"\#(ada)"}"#, time: 1)  // not an uploaded kind
        let bobs = try decision(store, bob)
        let second = try decision(store, ada)
        try store.append(kind: "sdk.state", data: "not json", time: 1)

        var batch = try store.auditBatch(ada, after: 1, kinds: Self.kinds, limit: 100)
        #expect(batch.events.map(\.sequence) == [first, second])
        #expect(batch.through == second + 1, "read to the journal's end")
        batch = try store.auditBatch(ada, after: 1, kinds: Self.kinds, limit: 1)
        #expect(
            batch.events.map(\.sequence) == [first] && batch.through == first, "a full batch ends at its last event")
        #expect(try store.auditBacklog(ada, after: 1, kinds: Self.kinds) == 2)
        #expect(try store.auditBatch(bob, after: 1, kinds: Self.kinds, limit: 100).events.map(\.sequence) == [bobs])

        try store.setAuditCursor(ada, through: first)
        try store.setAuditCursor(ada, through: 1)  // never back
        #expect(try store.auditCursor(ada) == first)
        #expect(try store.auditBacklog(ada, after: first, kinds: Self.kinds) == 1)

        // The cursor goes with its credential.
        #expect(try store.deleteCredential(CredentialID(ada)!))
        #expect(try store.auditCursor(ada) == nil)
    }

    @Test func theCursorSurvivesReopening() throws {
        let ada: String
        do {
            let store = try AccessStore(directory: directory, dataKey: .success(.forTests))
            ada = try insert(store, byte: 3)
            let sequence = try decision(store, ada)
            try store.setAuditCursor(ada, through: sequence)
        }
        let reopened = try AccessStore(directory: directory, dataKey: .success(.forTests))
        #expect(try reopened.auditCursor(ada) == 1)
        #expect(try reopened.auditBacklog(ada, after: 1, kinds: Self.kinds) == 0)
    }

    /// Retention removed events after the cursor: the batch says where the journal now starts.
    @Test func retentionBeyondTheCursorShowsAsTheOldestKept() throws {
        let store = try AccessStore(directory: directory, dataKey: .success(.forTests))
        let ada = try insert(store, byte: 4)
        for _ in 0..<5 { _ = try decision(store, ada) }
        try store.prune(maxEvents: 2, maxAge: 1e9, now: 1)
        let batch = try store.auditBatch(ada, after: 0, kinds: Self.kinds, limit: 100)
        #expect(batch.oldestKept == 4 && batch.events.map(\.sequence) == [4, 5])
    }
}
