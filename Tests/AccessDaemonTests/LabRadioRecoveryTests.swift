import AccessJSON
import BlueZTestSupport
import Foundation
import SuiteTraits
import Testing

/// The recovery ladder against the real kernel and bluetoothd (issue #38): the kiosk's
/// controller (hci1) is wedged by the lab's Bumble radio as the field's are (a stuck receiver
/// until the adapter is powered on again), a person stands in manual range at the front door
/// (hci0). scripts/test runs this suite in the same boot as LabEndToEndTests.
@Suite("Radio recovery in the lab", .threadOfItsOwn, .serialized, .enabled(if: Lab.isBumble), .timeLimit(.minutes(10)))
struct LabRadioRecoveryTests {
    /// Continues the `[bluetooth]` section LabScenario opens (the other lab suites run
    /// without the ladder, so that a reader falling silent on purpose never power-cycles).
    static let recovering = "radio_recovery = true\n"

    /// Wedged while the reader is heard: discovery restarted, then the adapter power-cycled,
    /// heard again, and the next manual access granted. Prints wedge → hearing again.
    @Test func aWedgedRadioIsPowerCycledAndTheDoorOpens() async throws {
        let lab = try await LabScenario(
            name: "wedge", accessdConfig: Self.recovering, readers: LabEndToEndTests.frontDoor)
        defer { lab.tearDown() }
        _ = try await lab.register()
        try lab.radio.rssi("hci1", "hci0", -90)
        _ = try await lab.waitForReader("00002A01")
        let wedged = ContinuousClock.now
        try lab.radio.wedge("hci1")
        var radio = JSONValue.null
        for _ in 0..<300 {
            radio = try lab.daemon.call("status.get").get()["radio"] ?? .null
            let recovered = radio["recoveries"]?.array?.contains { $0["result"] == "recovered" } ?? false
            if recovered { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let healed = ContinuousClock.now - wedged
        print("wedge → heard again: \(healed); radio \(radio.jsonText)")
        #expect(
            radio["recoveries"]?.array?.contains { $0["rung"] == "powerCycle" && $0["result"] == "recovered" } == true)
        #expect(healed < .seconds(20), "target 15 s with the defaults")
        let granted = try lab.manual("access.request", ["reader": "2A01"]).get()
        #expect(granted["granted"] == true, "\(granted)")
    }

    /// A controller no power cycle brings back: reported stuck, the socket still answers, and
    /// the power cycles are bounded by the backoff.
    @Test func aHardWedgeIsReportedStuckAndPowerCyclesAreBounded() async throws {
        let lab = try await LabScenario(
            name: "hard-wedge", accessdConfig: Self.recovering, readers: LabEndToEndTests.frontDoor)
        defer { lab.tearDown() }
        try lab.radio.rssi("hci1", "hci0", -70)
        _ = try await lab.waitForReader("00002A01")
        let wedged = ContinuousClock.now
        try lab.radio.wedge("hci1", hard: true)
        defer { try? lab.radio.unwedge("hci1") }
        var status = JSONValue.null
        for _ in 0..<400 {
            status = try lab.daemon.call("status.get").get()
            if status["states"]?.array?.contains("errorBleStuck") == true { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        print("wedge → stuck: \(ContinuousClock.now - wedged); radio \(status["radio"]?.jsonText ?? "")")
        #expect(status["states"]?.array?.contains("errorBleStuck") == true)
        // What an operator sees: the steps, and what only a person can do.
        let (_, steps) = try lab.daemon.accessctl(["events", "--kinds", "radio.recovery"])
        let (_, diagnose) = try lab.daemon.accessctl(["diagnose"])
        print("$ accessctl events --kinds radio.recovery\n\(steps)$ accessctl diagnose\n\(diagnose)")
        #expect(steps.contains("hci1: still hears nothing after "), "\(steps)")
        #expect(steps.contains("of silence: power-cycling the adapter"), "\(steps)")
        #expect(steps.contains("!! hci1: stuck"), "\(steps)")
        #expect(diagnose.contains("STUCK: hears nothing after a restart of discovery and a power cycle"), "\(diagnose)")
        #expect(diagnose.contains("unplug and replug the adapter, or reboot the kiosk"), "\(diagnose)")
        // Over the next 40 s: the backoff allows one more power cycle at most.
        let before = powerCycles(status)
        try await Task.sleep(for: .seconds(40))
        let after = powerCycles(try lab.daemon.call("status.get").get())
        #expect(after - before <= 1, "\(before) → \(after)")
        // A person replugs the dongle: heard again, the state clears.
        try lab.radio.unwedge("hci1")
        for _ in 0..<600 {
            if try lab.daemon.call("status.get").get()["states"]?.array?.contains("errorBleStuck") == false { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(try lab.daemon.call("status.get").get()["states"]?.array?.contains("errorBleStuck") == false)
    }

    /// Two kiosk adapters (issue #38, part 2): the one in use wedges for good, scanning moves
    /// to the second at the first silence (no ladder to climb with a standby), and the door
    /// opens through it. Prints wedge → moved and moved → scanning.
    @Test func aSecondAdapterTakesOverWhenTheFirstGoesDeaf() async throws {
        let lab = try await LabScenario(
            name: "two-adapters", adapters: ["hci1", "hci2"], accessdConfig: Self.recovering,
            readers: LabEndToEndTests.frontDoor)
        defer { lab.tearDown() }
        _ = try await lab.register()
        try lab.radio.rssi("hci1", "hci0", -90)
        try lab.radio.rssi("hci2", "hci0", -90)
        _ = try await lab.waitForReader("00002A01")
        let before = try lab.daemon.call("status.get").get()
        #expect(before["adapter"] == "hci1", "\(before.jsonText)")
        #expect(
            before["radio"]?["adapters"] == [["name": "hci1", "role": "inUse"], ["name": "hci2", "role": "standby"]],
            "\(before.jsonText)")

        let wedged = ContinuousClock.now
        try lab.radio.wedge("hci1", hard: true)
        defer { try? lab.radio.unwedge("hci1") }
        var moved: ContinuousClock.Instant?
        var scanning: ContinuousClock.Instant?
        var status = JSONValue.null
        for _ in 0..<600 {
            status = try lab.daemon.call("status.get").get()
            if moved == nil, status["adapter"] == "hci2" { moved = .now }
            if moved != nil, status["isScanning"] == true {
                scanning = .now
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let (movedAt, scanningAt) = (try #require(moved), try #require(scanning))
        print("wedge → moved to hci2: \(movedAt - wedged); moved → scanning on hci2: \(scanningAt - movedAt)")
        #expect(scanningAt - movedAt < .seconds(3))
        #expect(status["states"]?.array?.contains("errorBleStuck") == false, "\(status.jsonText)")
        let hci1 = status["radio"]?["adapters"]?.array?.first
        #expect(hci1?["name"] == "hci1" && hci1?["role"] == "quarantined", "\(status.jsonText)")
        #expect(movedAt - wedged < .seconds(10), "5 s of silence, then the move")

        // The door, through the second adapter.
        _ = try await lab.waitForReader("00002A01")
        let granted = try lab.manual("access.request", ["reader": "2A01"]).get()
        #expect(granted["granted"] == true, "\(granted)")
        let (_, steps) = try lab.daemon.accessctl(["events", "--kinds", "radio.recovery"])
        let (_, shown) = try lab.daemon.accessctl(["status"])
        print("$ accessctl events --kinds radio.recovery\n\(steps)$ accessctl status\n\(shown)")
        #expect(steps.contains("scanning moved from hci1 to hci2 (silent)"), "\(steps)")
        #expect(shown.contains("adapters:          hci1 quarantined (heard nothing; taken again in "), "\(shown)")
    }

    private func powerCycles(_ status: JSONValue) -> Int64 {
        (status["radio"]?["recoveries"]?.array ?? []).filter { $0["rung"] == "powerCycle" }
            .reduce(0) { $0 + ($1["count"]?.int ?? 0) }
    }
}
