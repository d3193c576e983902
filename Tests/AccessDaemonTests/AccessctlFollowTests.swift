import AccessCore
import AccessJSON
import BlueZTestSupport
import Foundation
import SuiteTraits
import Testing

/// `accessctl events --follow` and `readers --watch` as people and scripts use them: through
/// a pipe, into a file, across a restart of accessd (issue #12, items 1 and 2).
@Suite("accessctl follow modes", .threadOfItsOwn)
struct AccessctlFollowTests {
    static let accessctl = URL(fileURLWithPath: DaemonHarness.accessdPath).deletingLastPathComponent()
        .appendingPathComponent("accessctl").path

    /// Through `| cat` the lines sat in a 4 KiB stdio buffer (a quiet door's events for
    /// hours), and a restart of accessd ended the follow with exit 69. Now each line is
    /// written as it happens, a restart is waited out, and the follow goes on after the last
    /// event it printed: nothing lost, nothing twice.
    @Test func eventsFollowThroughAPipeSurvivesARestart() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        let control = try harness.connect()
        let since = try control.call("status.get").get()["lastSequence"]?.int ?? 0
        let out = harness.directory + "/follow.out", err = harness.directory + "/follow.err"
        let follow = try ChildProcess(["/bin/sh", "-c", "'\(Self.accessctl)' events --follow --since \(since) --socket '\(harness.socketPath)' 2>'\(err)' | cat > '\(out)'"])
        defer { _ = follow.stop(grace: 1) }
        _ = try control.call("scanning.set", ["enabled": false]).get()
        let beforeRestart = try await waitForLine(in: out, containing: "\"isScanning\":false")
        #expect(beforeRestart.range(of: #"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}  \d+  sdk\.state  \{"#, options: .regularExpression) != nil,
                "\(beforeRestart)")

        #expect(harness.stop() == 0)
        try await harness.start()
        _ = try harness.connect().call("scanning.set", ["enabled": true]).get()
        _ = try await waitForLine(in: out, containing: "\"isScanning\":true")
        let messages = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        #expect(messages.contains("accessd closed the connection; reconnecting"), "\(messages)")
        #expect(messages.contains("reconnected; resuming after event"), "\(messages)")
        #expect(follow.isRunning)
        let sequences = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n")
            .compactMap { Int64($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst(2).first ?? "") }
        #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count, "\(sequences)")
        #expect(sequences.first == since + 1)
        print("events --follow across a restart:\n\(try String(contentsOfFile: out, encoding: .utf8))\(messages)")
    }

    /// Into a file, `readers --watch` wrote clear-screen codes. Now a file gets the table
    /// again after a blank line, without codes, as each change happens.
    @Test func readersWatchIntoAFileHasNoTerminalCodes() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        let out = harness.directory + "/watch.out"
        let watch = try ChildProcess([Self.accessctl, "readers", "--watch", "--socket", harness.socketPath], output: out)
        defer { _ = watch.stop(grace: 1) }
        _ = try await waitForLine(in: out, containing: "(no readers heard)")
        try await harness.mock.addDevice(DaemonHarness.readerAddress, alias: "Front door")
        try await harness.advertise(payload: DaemonEndToEndTests.payload, rssi: -69)
        _ = try await waitForLine(in: out, containing: "00002A01")
        let text = try String(contentsOfFile: out, encoding: .utf8)
        #expect(!text.contains("\u{1B}"), "\(text)")
        #expect(text.contains("\n\nID "), "a blank line before each table: \(text)")
    }

    private func waitForLine(in path: String, containing text: String) async throws -> String {
        for _ in 0..<500 {
            let content = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            if let line = content.split(separator: "\n").first(where: { $0.contains(text) }) { return String(line) }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestEnvironmentError("no line with \(text) in \(path) within 10 s: \((try? String(contentsOfFile: path, encoding: .utf8)) ?? "")")
    }
}
