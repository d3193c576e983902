import AccessJSON
import BlueZTestSupport
import Clocks
import Testing

@testable import AccessDaemon
@testable import ControlSocket

/// The recovery ladder carried out by the discovery service (issue #38), over the fake
/// central with an adapter wedged as the lab's `radioctl wedge` does, on a virtual clock.
@Suite("Radio recovery over the fake central", .timeLimit(.minutes(5)))
struct RadioRecoveryShellTests {
    private func shell(_ clock: TestClock<Duration>) async throws -> ShellHarness {
        let shell = try ShellHarness(clock: clock) { $0.radioRecovery = true }
        try await shell.start()
        try await shell.readerAdvertises(nil)
        return shell
    }

    /// Seconds of virtual time, a tick each, letting the service act on each.
    private func wait(_ clock: TestClock<Duration>, seconds: Int) async throws {
        for _ in 0..<seconds {
            await clock.advance(by: .seconds(1))
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    private func radio(_ shell: ShellHarness) async throws -> JSONValue {
        try await shell.call("status.get").get()["radio"] ?? .null
    }

    @Test func aWedgedAdapterIsRestartedThenPowerCycledAndHeardAgain() async throws {
        let clock = TestClock<Duration>()
        let shell = try await shell(clock)
        await shell.central.wedge("hci0")
        try await wait(clock, seconds: 6)
        try await shell.waitUntil("discovery restarted") { await shell.central.callCount("StopDiscovery") == 1 }
        #expect(try await radio(shell)["state"] == "restartedDiscovery")
        try await wait(clock, seconds: 6)
        try await shell.waitUntil("power-cycled") {
            await shell.central.callCount("SetPowered /org/bluez/hci0 true") == 1
        }
        #expect(await shell.central.callCount("SetPowered /org/bluez/hci0 false") == 1)
        // The power cycle cleared the wedge: the reader is heard, the ladder ends there.
        try await shell.readerAdvertises(nil)
        try await shell.waitUntil("listening") { try await radio(shell)["state"] == "listening" }
        let recoveries = try await radio(shell)["recoveries"]?.array ?? []
        print("radio after the power cycle: \(try await radio(shell).jsonText)")
        #expect(recoveries.contains { $0["rung"] == "powerCycle" && $0["result"] == "recovered" && $0["count"] == 1 })
        #expect(recoveries.contains { $0["rung"] == "restartDiscovery" && $0["result"] == "silent" })
        #expect(try await shell.call("status.get").get()["states"]?.array?.contains("errorBleStuck") == false)
        await shell.stop()
    }

    @Test func aHardWedgeIsStuckThenTriedAgainAfterTheBackoff() async throws {
        let clock = TestClock<Duration>()
        let shell = try await shell(clock)
        await shell.central.wedge("hci0", .hard)
        try await wait(clock, seconds: 18)
        try await shell.waitUntil("stuck") {
            try await shell.call("status.get").get()["states"]?.array?.contains("errorBleStuck") == true
        }
        let stuck = try await radio(shell)
        #expect(stuck["state"] == "stuck" && stuck["retryInSeconds"]?.int ?? 0 > 20, "\(stuck)")
        #expect(await shell.central.callCount("SetPowered /org/bluez/hci0 true") == 1)
        // Not again before the backoff (30 s) …
        try await wait(clock, seconds: 20)
        #expect(await shell.central.callCount("SetPowered /org/bluez/hci0 true") == 1)
        // … then once.
        try await wait(clock, seconds: 12)
        try await shell.waitUntil("power-cycled again") {
            await shell.central.callCount("SetPowered /org/bluez/hci0 true") == 2
        }
        // A person replugs the dongle: heard again, the state clears.
        await shell.central.unwedge("hci0")
        try await shell.readerAdvertises(nil)
        try await shell.waitUntil("not stuck") {
            try await shell.call("status.get").get()["states"]?.array?.contains("errorBleStuck") == false
        }
        await shell.stop()
    }

    @Test func offByConfigurationNothingIsTried() async throws {
        let clock = TestClock<Duration>()
        let shell = try ShellHarness(clock: clock)
        try await shell.start()
        try await shell.readerAdvertises(nil)
        await shell.central.wedge("hci0")
        try await wait(clock, seconds: 90)
        #expect(await shell.central.callCount("StopDiscovery") == 0)
        #expect(await shell.central.callCount("SetPowered") == 0)
        await shell.stop()
    }
}
