import AccessCore
import AccessJSON
import AccessStore
import BlueZTestSupport
import Foundation
import NIOConcurrencyHelpers
import SiteContract
import Testing

@testable import AccessDaemon
@testable import ControlSocket

/// The audit upload (issue #13, item 5; docs/site-api.md §4.5): the daemon's services over
/// the fake central and a reader, the site a scripted HTTP server that keeps what it is sent
/// as a site would (once per sequence) and can be taken away. The kills of the real accessd
/// and the real site are the lab's (`LabEndToEndTests.auditEventsSurviveKillsOfTheSiteAndAccessd`).
@Suite("Access events are uploaded to the site", .serialized, .timeLimit(.minutes(5)))
struct AuditUploadTests {
    /// A site's events route: keeps each event once, answers its `through`; `mode` says
    /// whether it is there, away (503) or of an API without the route (404).
    final class EventsSite: Sendable {
        enum Mode { case up, away, withoutRoute }
        struct Kept {
            var events: [Int64: AuditEvent] = [:]
            var through: Int64 = 0
            var batches = 0
            var copies = 0
        }
        let kept: NIOLockedValueBox<Kept>
        let mode: NIOLockedValueBox<Mode>
        let server: ScriptedSite

        init() async throws {
            let kept = NIOLockedValueBox(Kept())
            let mode = NIOLockedValueBox(Mode.up)
            self.kept = kept
            self.mode = mode
            server = try await ScriptedSite { request, _ in
                guard request.method == "POST", request.target.hasSuffix("/events") else {
                    return .init(status: 404, body: #"{"error":{"code":"route.unknown","message":"not here"}}"#)
                }
                switch mode.withLockedValue({ $0 }) {
                case .away: return .init(status: 503, body: #"{"error":{"code":"site.down","message":"maintenance"}}"#)
                case .withoutRoute:
                    return .init(status: 404, body: #"{"error":{"code":"route.unknown","message":"no"}}"#)
                case .up: break
                }
                guard let batch = try? JSONDecoder().decode(AuditUploadRequest.self, from: Data(request.body.utf8)),
                    batch.problem == nil
                else {
                    return .init(status: 400, body: #"{"error":{"code":"request.invalid","message":"bad batch"}}"#)
                }
                let through = kept.withLockedValue { kept in
                    kept.batches += 1
                    for event in batch.events {
                        if kept.events[event.seq] != nil { kept.copies += 1 }
                        kept.events[event.seq] = event
                    }
                    kept.through = max(kept.through, batch.through)
                    return kept.through
                }
                return .init(status: 200, body: #"{"through":\#(through)}"#)
            }
        }

        var url: String { "http://127.0.0.1:\(server.port)" }
    }

    private func setUp(_ site: EventsSite) async throws -> ShellHarness {
        let shell = try ShellHarness(siteURL: site.url)
        try await shell.start()
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()))
        return shell
    }

    private func access(_ shell: ShellHarness) async throws {
        let answer = try await shell.call("access.request", ["reader": "2A01"], role: .operator).get()
        #expect(answer["granted"] == true, "\(answer)")
    }

    private func audit(_ shell: ShellHarness) async throws -> JSONValue {
        try #require(try await shell.call("status.get").get()["audit"])
    }

    /// The journal's events of the uploaded kinds for the harness's credential.
    private func journalled(_ shell: ShellHarness) throws -> [AccessStore.Event] {
        try shell.store.events(after: 0, kinds: AuditUpload.kinds).filter {
            (try? JSONValue.parse($0.data))?["credential"] == .string(ShellHarness.credentialID.description)
        }
    }

    @Test func accessEventsReachTheSiteInOrderAndOnce() async throws {
        let site = try await EventsSite()
        let shell = try await setUp(site)
        for _ in 0..<3 { try await access(shell) }
        let journal = try journalled(shell)
        #expect(journal.count == 3)
        try await shell.waitUntil("the site has the three decisions") {
            site.kept.withLockedValue { $0.events.count } == journal.count
        }
        let kept = site.kept.withLockedValue { $0 }
        #expect(kept.events.keys.sorted() == journal.map(\.sequence))
        for event in journal {
            #expect(kept.events[event.sequence]?.kind == event.kind)
            #expect(kept.events[event.sequence]?.data == (try JSONValue.parse(event.data)))
            #expect(kept.events[event.sequence]?.time == event.time)
        }
        #expect(kept.copies == 0, "nothing sent twice")
        try await shell.waitUntil("status says current") { try await self.audit(shell)["backlog"] == 0 }
        let audit = try await audit(shell)
        #expect(audit["enabled"] == true && audit["sites"]?.array?.first?["state"] == "current", "\(audit)")
        #expect(
            audit["sites"]?.array?.first?["site"] == "Head office"
                && audit["sites"]?.array?.first?["lastUploadAt"] != nil)
        await shell.stop()
        await site.server.stop()
    }

    /// While the site is away its events wait and `status.get` counts them; when it is back
    /// they go, in order, each once.
    @Test func aSiteAwayKeepsTheBacklogUntilItIsBack() async throws {
        let site = try await EventsSite()
        site.mode.withLockedValue { $0 = .away }
        let shell = try await setUp(site)
        for _ in 0..<2 { try await access(shell) }
        try await shell.waitUntil("the backlog counts both") {
            let audit = try await self.audit(shell)
            return audit["backlog"] == .int(Int64(try journalled(shell).count))
                && audit["sites"]?.array?.first?["state"] == "failing"
        }
        let failing = try await audit(shell)
        #expect(failing["sites"]?.array?.first?["error"]?.string?.contains("503") == true, "\(failing)")
        #expect(site.kept.withLockedValue { $0.events.isEmpty })
        try await access(shell)
        try await shell.waitUntil("a third waits too") {
            try await self.audit(shell)["backlog"] == .int(Int64(try journalled(shell).count))
        }

        site.mode.withLockedValue { $0 = .up }
        let all = try journalled(shell).count
        try await shell.waitUntil("the site has all three", timeout: readinessCeiling) {
            site.kept.withLockedValue { $0.events.count } == all
        }
        #expect(site.kept.withLockedValue { $0.events.keys.sorted() } == (try journalled(shell).map(\.sequence)))
        #expect(site.kept.withLockedValue { $0.copies } == 0)
        try await shell.waitUntil("status says current") {
            try await self.audit(shell)["sites"]?.array?.first?["state"] == "current"
        }
        #expect(try await audit(shell)["backlog"] == 0)
        await shell.stop()
        await site.server.stop()
    }

    /// Decisions made before the site revoked the credential still reach it: they are the
    /// record of what the credential did (it is no longer presented).
    @Test func aRevokedCredentialsDecisionsStillGo() async throws {
        let site = try await EventsSite()
        site.mode.withLockedValue { $0 = .away }
        let shell = try await setUp(site)
        try await access(shell)
        try await shell.waitUntil("the decision waits") { try await self.audit(shell)["backlog"] == 1 }
        shell.daemon.book.setState(.revoked, of: ShellHarness.credentialID)
        site.mode.withLockedValue { $0 = .up }
        try await shell.waitUntil("the site has it", timeout: readinessCeiling) {
            site.kept.withLockedValue { $0.events.count } == 1
        }
        #expect(site.kept.withLockedValue { $0.events.keys.sorted() } == (try journalled(shell).map(\.sequence)))
        await shell.stop()
        await site.server.stop()
    }

    @Test func aSiteWithoutTheRouteIsSaidToTakeNoEvents() async throws {
        let site = try await EventsSite()
        site.mode.withLockedValue { $0 = .withoutRoute }
        let shell = try await setUp(site)
        try await access(shell)
        try await shell.waitUntil("unsupported") {
            let audit = try await self.audit(shell)
            return audit["sites"]?.array?.first?["state"] == "unsupported" && audit["backlog"] == 1
        }
        await shell.stop()
        await site.server.stop()
    }

    /// A batch larger than a site must accept is cut; the rest follows in the next.
    @Test func aLargeBacklogGoesInBatchesThatFit() {
        let events = (1...150).map { sequence in
            AccessStore.Event(
                sequence: Int64(sequence), time: 1_800_000_000, kind: "access.completed",
                data: #"{"credential":"x","padding":"\#(String(repeating: "p", count: 600))"}"#)
        }
        let request = AuditUpload.fitted(
            AccessStore.AuditBatch(events: Array(events.prefix(100)), through: 100, oldestKept: 1),
            gap: nil)
        let size = (try? JSONEncoder().encode(request).count) ?? .max
        #expect(
            size <= AuditUploadRequest.maximumBody && request.events.count < 100,
            "\(size) bytes, \(request.events.count) events")
        #expect(request.through == request.events.last?.seq && request.problem == nil)
    }
}
