import AccessJSON
import BlueZTestSupport
import Foundation
import Testing

/// `accessctl probe` through real BlueZ (issue #14, item 4): the radio sets what the kiosk
/// hears, as a person standing at a door would; the calibration's advice is then taken as
/// printed, and the door opens from exactly there.
extension LabEndToEndTests {
    @Test func aProbeMeasuresTheReaderAndCalibrates() async throws {
        let lab = try await LabScenario(name: "probe", accessdConfig: Self.quickRange, readers: Self.frontDoor)
        defer { lab.tearDown() }
        _ = try await lab.register()
        try lab.radio.rssi("hci1", "hci0", -66, sigma: 1)
        _ = try await lab.waitForReader("00002A01")

        // Near the door: heard every ~100 ms (readersim's interval_ms), two trial listings.
        let (status, output) = try lab.daemon.accessctl(["probe", "2A01", "--seconds", "5", "--trials", "2"])
        print("$ accessctl probe 2A01 --seconds 5 --trials 2\n\(output)")
        #expect(status == 0, "\(output)")
        #expect(
            output.contains("here in auto range") && output.contains("exchanges:       2 of 2 answered"), "\(output)")
        let (_, json) = try lab.daemon.accessctl(["probe", "2A01", "--seconds", "3", "--trials", "0", "--json"])
        let probe = try JSONValue.parse(json)["probe"] ?? .null
        let interval = probe["intervalMs"]?["median"]?.number ?? 0
        #expect((60...250).contains(interval), "advertising interval \(interval) ms: \(json)")
        #expect(lab.readers.exchanges.allSatisfy { $0["operation"] != "access" }, "the trials opened no door")

        // Away (the reader goes stale), then back to where the door should open, further out
        // and noisier: in manual range only.
        try lab.radio.off("hci1", "hci0")
        _ = try lab.event("reader.unavailable", timeout: .seconds(20)) { $0["id"] == "00002A01" }
        try lab.radio.rssi("hci1", "hci0", -84, sigma: 2)
        _ = try await lab.waitForReader("00002A01")
        let (_, calibration) = try lab.daemon.accessctl(["probe", "2A01", "--seconds", "6", "--calibrate"])
        print("$ accessctl probe 2A01 --seconds 6 --calibrate\n\(calibration)")
        #expect(calibration.contains("here in manual range"), "\(calibration)")
        let advice = try #require(
            calibration.split(separator: "\n").first { $0.contains("accessctl readers scope 00002A01 --offset") },
            "no offset advised: \(calibration)")
        let arguments = advice.split(separator: " ").drop { $0 != "accessctl" }.dropFirst().map(String.init)
        let (applied, appliedOutput) = try lab.daemon.accessctl(arguments)
        #expect(applied == 0, "\(arguments): \(appliedOutput)")
        // Standing still where it was calibrated, the reader is in auto range now.
        var inRange = false
        for _ in 0..<40 where !inRange {
            try await Task.sleep(for: .milliseconds(250))
            let reader = try lab.daemon.call("readers.list").get()["readers"]?.array?.first { $0["id"] == "00002A01" }
            inRange = reader?["isInAutoConnectRange"] == true
        }
        let readers = (try? lab.daemon.call("readers.list").get()) ?? .null
        #expect(inRange, "after \(arguments.joined(separator: " ")): \(readers)")
    }
}
