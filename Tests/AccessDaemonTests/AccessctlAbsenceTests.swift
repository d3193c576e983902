import AccessJSON
import BlueZTestSupport
import Foundation
import SuiteTraits
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The follow modes while accessd is away (issue #35, item 1): `readers --watch` said
/// "reconnected" and then froze, the old table on screen as if live; neither follow mode
/// could start while accessd was down.
@Suite("accessctl while accessd is away", .threadOfItsOwn, .timeLimit(.minutes(5)))
struct AccessctlAbsenceTests {
    /// On a terminal (script(1)'s pty): while accessd is stopped the view says so and marks
    /// what it shows stale, its clock moving; when accessd is back the view is live again,
    /// listed afresh, without waiting for a reader to move. Prints both delays.
    @Test func readersWatchSaysAccessdIsAwayAndComesBackLive() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        _ = try await harness.waitForStatus { $0["isScanning"]?.bool == true }
        let view = try ReadersWatchOnATerminal(harness)
        defer { view.stop() }
        let screen = view.screen
        try await harness.mock.addDevice(DaemonHarness.readerAddress, alias: "Front door")
        try await harness.advertise(payload: DaemonEndToEndTests.payload, rssi: -90)
        _ = try await waitForLine(in: screen, containing: "00002A01 Front door")

        let beforeStop = lineCount(screen)
        let stopped = ContinuousClock.now
        #expect(harness.stop() == 0)
        _ = try await waitForLine(in: screen, containing: "accessd unreachable since", after: beforeStop)
        let awayShown = ContinuousClock.now - stopped
        let stale = try await waitForLine(in: screen, containing: "00002A01 Front door", after: beforeStop)
        #expect(stale.contains("stale"), "\(stale)")

        let beforeStart = lineCount(screen)
        let started = ContinuousClock.now
        try await harness.start()
        _ = try await waitForLine(in: screen, containing: "scanning on", after: beforeStart)
        let liveShown = ContinuousClock.now - started
        print("readers --watch: accessd away shown after \(awayShown), live again \(liveShown) after start")
        // Listed afresh: the restarted accessd has heard nothing yet, and nothing is left
        // marked stale.
        _ = try await waitForLine(in: screen, containing: "(no readers heard)", after: beforeStart)
        let frames = try String(contentsOfFile: screen, encoding: .utf8).components(separatedBy: "\u{1B}[H\u{1B}[2J")
        #expect(frames.last?.contains("stale") == false, "\(frames.last ?? "")")
        #expect(harness.stop() == 0)
    }

    /// `--wait` starts a follow before accessd, as `journalctl -f` can.
    @Test func eventsFollowWaitsForAccessdToStart() async throws {
        let harness = try await DaemonHarness()
        let follow = try EventsFollowThroughAPipe(harness, "--wait")
        defer { follow.stop() }
        let (out, err) = (follow.out, follow.err)
        _ = try await waitForLine(in: err, containing: "accessctl: waiting for accessd at \(harness.socketPath)")
        try await Task.sleep(for: .seconds(1))
        #expect(follow.isRunning)
        try await harness.start()
        _ = try harness.connect().call("scanning.set", ["enabled": false]).get()
        _ = try await waitForLine(in: out, containing: "sdk.state  scanning off")
        let misuse = try runCommand(
            [AccessctlTests.accessctl, "events", "--wait", "--socket", harness.socketPath], mergingErrors: true)
        #expect(misuse.status == 64 && misuse.output.contains("--wait goes with --follow"), "\(misuse.output)")
        #expect(harness.stop() == 0)
    }
}
