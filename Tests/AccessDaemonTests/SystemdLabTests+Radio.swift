import AccessDaemon
import AccessJSON
import BlueZTestSupport
import Foundation
import Testing

extension SystemdLabTests {
    /// The recovery ladder as shipped (`radio_recovery` on by default) under the unit's
    /// sandbox, as user accessd with the package's D-Bus policy: bluetoothd takes the power
    /// cycle from it, the journal says each step under one `MESSAGE_ID`, and the wedged
    /// controller hears again (issue #38).
    @Test func aWedgedRadioIsPowerCycledByTheSandboxedService() async throws {
        try await Lab.ensureInstalled()
        try await Lab.withTheFrontDoor(directory: "/tmp/systemd-wedge") { _, _, radio in
            try await Lab.waitForTheFrontDoor()
            try await wedgeAndHearAgain(radio)
        }
    }

    private func wedgeAndHearAgain(_ radio: LabRadio) async throws {
        // Steps after this one: earlier tests leave no reader advertising, and with nothing
        // heard for discovery_watchdog the ladder climbs too (docs/bluez.md).
        let before = try #require(try Lab.call("status.get").get()["lastSequence"]?.int)
        let wedged = ContinuousClock.now
        try radio.wedge("hci1")
        defer { try? radio.unwedge("hci1") }
        let messageID = JournalFields.messageID(kind: "radio.recovery")
        func steps() throws -> [JSONValue] {
            try Lab.must("journalctl -u accessd MESSAGE_ID=\(messageID) -o json --no-pager").split(separator: "\n")
                .map { try JSONValue.parse(String($0)) }
                .filter { Int64($0["ACCESSD_SEQ"]?.string ?? "") ?? 0 > before }
        }
        try await Lab.waitFor("heard again after a power cycle", timeout: .seconds(60)) {
            try steps().contains { $0["ACCESSD_STEP"] == "recovered" }
        }
        print("systemd: wedge → heard again: \(ContinuousClock.now - wedged)")
        let entries = try steps()
        print(entries.map { $0["MESSAGE"]?.string ?? "?" }.joined(separator: "\n"))
        #expect(
            entries.map { $0["ACCESSD_STEP"]?.string ?? "?" } == ["restartingDiscovery", "powerCycling", "recovered"])
        #expect(entries.first { $0["ACCESSD_STEP"] == "powerCycling" }?["PRIORITY"] == "4")
        #expect(entries.last?["ACCESSD_AFTER"] == "powerCycle")
        let status = try Lab.call("status.get").get()
        #expect(status["radio"]?["state"] == "listening", "\(status["radio"]?.jsonText ?? "")")
    }
}
