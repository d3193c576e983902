import AccessCore
import AccessJSON
import BlueZTestSupport
import Foundation
import SuiteTraits
import Testing

@testable import AccessDaemon

/// The reader scope as an operator uses it (issue #13, item 1): the real accessd with the
/// file's rules, the real `accessctl readers scope` to show and change them, an operator's
/// rule kept across a restart, refusals that say where the rule is.
@Suite("Reader scope through accessctl", .threadOfItsOwn, .timeLimit(.minutes(5)))
struct ReaderScopeEndToEndTests {
    static let config = """
        [readers]
        allow = ["2A02"]

        [reader.2A03]
        path_loss_offset = -4
        manual = false
        """

    private func accessctl(_ arguments: [String], _ harness: DaemonHarness) throws -> (status: Int32, output: String) {
        let result = try runCommand(
            [AccessctlTests.accessctl] + arguments + ["--socket", harness.socketPath], mergingErrors: true)
        print("$ accessctl \(arguments.joined(separator: " "))\n\(result.output)")
        return (result.status, result.output)
    }

    @Test func anOperatorScopesReadersAndItOutlivesARestart() async throws {
        let harness = try await DaemonHarness(config: Self.config)
        try await harness.start()
        // A reader heard within auto range (path loss 10 dB).
        try await harness.mock.addDevice(DaemonHarness.readerAddress, alias: "Front door")
        try await harness.advertise(payload: DaemonEndToEndTests.payload, rssi: -69)
        _ = try await harness.waitForStatus { $0["readerCount"]?.int == 1 }

        let file = try accessctl(["readers", "scope"], harness)
        #expect(file.status == 0)
        #expect(
            file.output == """
                READER    RULE                      FROM
                00002A02  allow                     configuration
                00002A03  offset -4 dB, manual off  configuration
                only readers on the allow list open automatically

                """, "\(file.output)")
        // The heard reader is not on the allow list.
        let listed = try accessctl(["readers"], harness)
        #expect(listed.output.contains("auto: not allowed"), "\(listed.output)")

        let set = try accessctl(["readers", "scope", "2A01", "--deny", "--offset", "-3"], harness)
        #expect(set.status == 0 && set.output.contains("00002A01  deny, offset -3 dB  operator"), "\(set.output)")
        let readers = try accessctl(["readers"], harness)
        #expect(readers.output.split(separator: "\n").last?.hasSuffix("denied (operator)") == true, "\(readers.output)")
        let access = try accessctl(["access", "2A01"], harness)
        #expect(access.status == 1)
        #expect(
            access.output.contains(
                "refused: reader 00002A01 (Front door) is on this kiosk's deny list (set by an operator: accessctl readers scope 00002A01)"
            ),
            "\(access.output)")

        // Kept across a restart; a further change keeps what it does not name.
        #expect(harness.stop() == 0)
        try await harness.start()
        let changed = try accessctl(["readers", "scope", "2A01", "--offset", "2"], harness)
        #expect(changed.output.contains("00002A01  deny, offset +2 dB  operator"), "\(changed.output)")
        let events = try accessctl(["events", "--kinds", "readers.scopeChanged"], harness)
        #expect(
            events.output.contains("reader 00002A01: scope set by uid \(getuid()): deny, offset -3 dB"),
            "\(events.output)")
        #expect(
            events.output.contains("reader 00002A01: scope set by uid \(getuid()): deny, offset +2 dB"),
            "\(events.output)")

        // Refused: out of bounds (accessd says why), contradictory options (accessctl does).
        let far = try accessctl(["readers", "scope", "2A01", "--offset", "40"], harness)
        #expect(far.status == 64 && far.output.contains("a path-loss offset is between -30 and 30 dB"), "\(far.output)")
        let both = try accessctl(["readers", "scope", "2A01", "--deny", "--allow"], harness)
        #expect(both.status == 64, "\(both.output)")

        let reset = try accessctl(["readers", "scope", "2A01", "--reset"], harness)
        #expect(reset.status == 0)
        #expect(
            reset.output
                == "reader 00002A01: no rule; opened as it offers (but only readers on the allow list open automatically)\n",
            "\(reset.output)")
        #expect(try accessctl(["readers", "scope"], harness).output == file.output)
        #expect(harness.stop() == 0)
    }

    /// The file's rules are checked like every other setting: the line and the reason.
    @Test func theFilesRulesAreChecked() throws {
        func refusal(_ text: String) -> String? {
            do {
                _ = try ConfigurationLoader.parse(text, file: "accessd.toml")
                return nil
            } catch {
                return "line \(error.line.map(String.init) ?? "-"): \(error.reason)"
            }
        }
        #expect(
            refusal("[readers]\ndeny = [\"door\"]\n")
                == "line 2: 'door' is not a reader id (up to eight hex digits, as accessctl readers prints them)")
        #expect(
            refusal("[readers]\nallow = [\"2A01\"]\ndeny = [\"00002A01\"]\n")
                == "line 3: reader 00002A01 is on both allow and deny")
        #expect(
            refusal("[reader.2A01]\npath_loss_offset = 31\n") == "line 2: path_loss_offset must be within -30.0...30.0")
        #expect(
            refusal("[reader.2A01]\nopen = true\n")?.hasPrefix("line 2: unknown key 'open' in [reader.2A01]") == true)
        #expect(
            refusal("[reader.2A01]\nmanual = false\n[reader.00002A01]\nautomatic = false\n")?.contains("has two tables")
                == true)
        let rules = try ConfigurationLoader.parse(Self.config, file: "accessd.toml").readerRules
        #expect(
            rules == [
                ReaderID(0x2A02): .init(listing: .allowed), ReaderID(0x2A03): .init(pathLossOffset: -4, manual: false),
            ])
    }
}
