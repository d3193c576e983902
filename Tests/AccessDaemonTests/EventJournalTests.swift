import AccessJSON
import AccessStore
import BlueZTestSupport
import Foundation
import Logging
import SuiteTraits
import Testing
@testable import AccessDaemon
@testable import ControlSocket

/// The journal's replay and fan-out, against a real SQLite store.
@Suite("Event journal", .threadOfItsOwn)
struct EventJournalTests {
    /// A subscriber replays 5,000 events while another task keeps emitting: it receives every
    /// sequence number once, in order, and emitting never waits for the replay's chunks.
    @Test func replayWhileEmittingLosesAndRepeatsNothing() async throws {
        let directory = NSTemporaryDirectory() + "accessd-journal-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try AccessStore(directory: directory)
        let journal = try EventJournal(store: store, logger: Logger(label: "test"))
        for index in 0..<5000 { journal.emit("test.event", ["n": .int(Int64(index))]) }
        let client = ControlClient(id: 1, role: .observer, uid: 0, pid: 0, eventLimit: 20_000)
        // SQLite writes block: on threads of their own, not the shared pool.
        let emitter = taskOnThreadOfItsOwn {
            var slowest = Duration.zero
            for index in 5000..<5500 {
                let start = ContinuousClock.now
                journal.emit("test.event", ["n": .int(Int64(index))])
                slowest = max(slowest, ContinuousClock.now - start)
            }
            return slowest
        }
        let subscription = try journal.subscribe(client, kinds: nil, since: 0)
        let slowest = try await emitter.value
        #expect(subscription.oldestAvailable == 1)
        var sequences: [Int64] = []
        while sequences.count < 5500, let line = await client.outbox.next() {
            let object = try JSONValue.parse(line)
            sequences.append(try #require(object["params"]?["seq"]?.int))
        }
        #expect(sequences == Array(1...5500))
        #expect(subscription.replayed >= 5000)
        // Figures, not a timing test: printed for the record.
        print("journal: slowest emit during a 5,000-event replay: \(slowest)")
    }

    @Test func kindsFilterReplayAndLive() async throws {
        let directory = NSTemporaryDirectory() + "accessd-journal-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let journal = try EventJournal(store: try AccessStore(directory: directory), logger: Logger(label: "test"))
        journal.emit("a", [:])
        journal.emit("b", [:])
        let client = ControlClient(id: 1, role: .observer, uid: 0, pid: 0, eventLimit: 100)
        let subscription = try journal.subscribe(client, kinds: ["b"], since: 0)
        #expect(subscription.replayed == 1)
        journal.emit("a", [:])
        journal.emit("b", [:])
        var kinds: [String] = []
        for _ in 0..<2 {
            let line = try #require(await client.outbox.next())
            kinds.append(try JSONValue.parse(line)["params"]?["kind"]?.string ?? "?")
        }
        #expect(kinds == ["b", "b"])
        #expect(journal.unsubscribe(client))
        #expect(!journal.unsubscribe(client))
    }
}
