import AccessJSON
import BlueZTestSupport
import Foundation
import SuiteTraits
import Testing

/// `accessctl readers` at a terminal's width (issue #35, item 5: eleven columns made 121
/// characters a line), with nmcli-style column selection.
@Suite("accessctl tables", .threadOfItsOwn, .timeLimit(.minutes(5)))
struct AccessctlTableTests {
    @Test func theReadersTableFitsEightyColumnsAndTakesFields() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        try await harness.mock.addDevice(DaemonHarness.readerAddress, alias: "Front door")
        try await harness.advertise(payload: DaemonEndToEndTests.payload, rssi: -69)
        _ = try await harness.waitForStatus { $0["readerCount"] == 1 }
        func readers(_ extra: [String]) throws -> CommandResult {
            try runCommand(
                [AccessctlTests.accessctl, "readers"] + extra + ["--socket", harness.socketPath], mergingErrors: true)
        }
        let table = try readers([])
        print("$ accessctl readers\n\(table.output)")
        let lines = table.output.split(separator: "\n")
        #expect(lines.first?.split(separator: " ", omittingEmptySubsequences: true).first == "ID", "\(table.output)")
        #expect(lines.allSatisfy { $0.count <= 80 }, "\(table.output)")
        #expect(lines.count == 2 && lines[1].hasPrefix("00002A01  Front door"), "\(table.output)")

        let chosen = try readers(["-f", "id,RANGE,heard"])
        #expect(chosen.output.split(separator: "\n").first == "ID        RANGE  HEARD", "\(chosen.output)")
        let all = try readers(["--fields", "all"])
        #expect(all.output.contains("RSSI") && all.output.contains("AUTO/MANUAL") && all.output.contains("-69 dBm"))
        let wrong = try readers(["-f", "id,loudness"])
        #expect(wrong.status == 64, "\(wrong.output)")
        #expect(wrong.output.contains("--fields: no column 'loudness' (columns: id,name,kind,rssi,path-loss"))
        #expect(harness.stop() == 0)
    }
}
