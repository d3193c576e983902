import AccessJSON
import BlueZTestSupport
import Clocks
import Testing

@testable import AccessDaemon
@testable import ControlSocket

/// Several adapters (issue #38, part 2) over the fake central on a virtual clock: scanning
/// leaves an adapter that is unplugged or stuck for the next one in `[bluetooth] adapters`,
/// and returns to the first once it has been steady for 30 s.
@Suite("Adapter failover over the fake central", .timeLimit(.minutes(5)))
struct AdapterFailoverShellTests {
    private func shell(_ clock: TestClock<Duration>, recovery: Bool = false) async throws -> ShellHarness {
        let shell = try ShellHarness(clock: clock) {
            $0.adapter = nil
            $0.adapters = ["hci0", "hci1"]
            $0.radioRecovery = recovery
        }
        await shell.central.addAdapter("hci1")
        try await shell.start()
        return shell
    }

    /// Seconds of virtual time, a tick each, letting the service act on each.
    private func wait(_ clock: TestClock<Duration>, seconds: Int) async throws {
        for _ in 0..<seconds {
            await clock.advance(by: .seconds(1))
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    private func adapterInUse(_ shell: ShellHarness) async throws -> String? {
        try await shell.call("status.get").get()["adapter"]?.string
    }

    private func switches(_ shell: ShellHarness) throws -> [JSONValue] {
        try shell.events("radio.recovery").filter { $0["step"] == "switchedAdapter" }
    }

    @Test func anUnpluggedAdapterIsLeftAndTheFirstIsTakenBackOnceSteady() async throws {
        let clock = TestClock<Duration>()
        let shell = try await shell(clock)
        #expect(try await adapterInUse(shell) == "hci0")
        #expect(await shell.central.callCount("StartDiscovery /org/bluez/hci1") == 0)

        await shell.central.removeAdapter("hci0")
        try await shell.waitUntil("scanning on hci1") {
            await shell.central.callCount("StartDiscovery /org/bluez/hci1") == 1
        }
        #expect(try await adapterInUse(shell) == "hci1")
        try await shell.waitUntil("the switch said") { try !switches(shell).isEmpty }
        let left = try switches(shell)[0]
        #expect(left["adapter"] == "hci1" && left["previous"] == "hci0" && left["reason"] == "removed", "\(left)")

        // Plugged in again: not taken at once (a replug can bounce), but after 30 s steady.
        await shell.central.addAdapter("hci0")
        try await wait(clock, seconds: 20)
        #expect(try await adapterInUse(shell) == "hci1")
        let roles = try await shell.call("status.get").get()["radio"]?["adapters"]
        #expect(
            roles == [["name": "hci0", "role": "standby"], ["name": "hci1", "role": "inUse"]], "\(roles ?? .null)")
        try await wait(clock, seconds: 11)
        try await shell.waitUntil("back on hci0") { try await adapterInUse(shell) == "hci0" }
        try await shell.waitUntil("scanning on hci0 again") {
            await shell.central.callCount("StartDiscovery /org/bluez/hci0") == 2
        }
        try await shell.waitUntil("the return said") { try switches(shell).count == 2 }
        #expect(try switches(shell)[1]["reason"] == "preferredBack")
        // Counted for a fleet's alerts (`accessd_adapter_switches_total{reason}`).
        let counted = await shell.daemon.metricsSnapshot().adapterSwitches
        #expect(counted == ["removed": 1, "preferredBack": 1], "\(counted)")
        await shell.stop()
    }

    @Test func aSilentAdapterIsLeftAtOncePowerCycledBehindAndQuarantined() async throws {
        let clock = TestClock<Duration>()
        let shell = try await shell(clock, recovery: true)
        try await shell.readerAdvertises(nil)
        await shell.central.wedge("hci0", .hard)
        // 5 s of silence where the reader was heard: no climbing, hci1 is usable.
        try await wait(clock, seconds: 6)
        try await shell.waitUntil("on hci1") { try await adapterInUse(shell) == "hci1" }
        try await shell.waitUntil("scanning on hci1") {
            await shell.central.callCount("StartDiscovery /org/bluez/hci1") == 1
        }
        // The deaf one is power-cycled behind the move (a soft wedge ends there), not restarted.
        try await shell.waitUntil("hci0 power-cycled") {
            await shell.central.callCount("SetPowered /org/bluez/hci0 true") == 1
        }
        #expect(await shell.central.callCount("SetPowered /org/bluez/hci0 false") == 1)
        #expect(await shell.central.callCount("StopDiscovery /org/bluez/hci0") == 0)
        let status = try await shell.call("status.get").get()
        #expect(status["states"]?.array?.contains("errorBleStuck") == false, "\(status.jsonText)")
        let hci0 = status["radio"]?["adapters"]?.array?.first
        #expect(hci0?["role"] == "quarantined" && (hci0?["quarantineSeconds"]?.int ?? 0) > 500, "\(status.jsonText)")
        #expect(try switches(shell).last?["reason"] == "silent")
        print("status after the failover: \(status["radio"]?.jsonText ?? "")")

        // Nothing heard on hci1 either (no reader there) for a minute: hci0 is not power-cycled
        // again (it is not in use), and not taken back during its quarantine.
        try await wait(clock, seconds: 60)
        #expect(try await adapterInUse(shell) == "hci1")
        #expect(await shell.central.callCount("SetPowered /org/bluez/hci0 true") == 1)
        await shell.stop()
    }

    @Test func aLoneAdapterClimbsTheLadderAndIsLeftWhenStuckForOnePluggedInLater() async throws {
        let clock = TestClock<Duration>()
        let shell = try ShellHarness(clock: clock) {
            $0.adapter = nil
            $0.adapters = ["hci0", "hci1"]
            $0.radioRecovery = true
        }
        try await shell.start()
        try await shell.readerAdvertises(nil)
        await shell.central.wedge("hci0", .hard)
        // No standby: restart, power cycle, stuck (16 s), as with one adapter.
        try await wait(clock, seconds: 18)
        try await shell.waitUntil("stuck") {
            try await shell.call("status.get").get()["states"]?.array?.contains("errorBleStuck") == true
        }
        #expect(await shell.central.callCount("StopDiscovery /org/bluez/hci0") == 1)
        // A second dongle plugged in: taken at once, the stuck one is quarantined.
        await shell.central.addAdapter("hci1")
        try await shell.waitUntil("on hci1") { try await adapterInUse(shell) == "hci1" }
        try await shell.waitUntil("the move said") { try switches(shell).last?["reason"] == "stuck" }
        #expect(try await shell.call("status.get").get()["states"]?.array?.contains("errorBleStuck") == false)
        await shell.stop()
    }
}
