import AccessCore
import AccessJSON
import BlueZTestSupport
import Foundation
import SuiteTraits
import Testing

@testable import AccessDaemon

/// `[metrics] listen` (docs/operations.md, "Metrics"): the real accessd scraped over HTTP and
/// over a Unix socket, its text checked by Prometheus's own `promtool check metrics`
/// (Debian's `prometheus`), and what a hostile or confused scraper gets.
@Suite(.threadOfItsOwn, .timeLimit(.minutes(5)))
struct MetricsTests {
    /// One scrape: the status line and the body.
    private func scrape(_ target: [String], path: String = "/metrics", method: String = "GET") throws -> (Int, String) {
        // `target`: curl's options, then the base URL, to which `path` is added.
        let arguments = target.dropLast() + [(target.last ?? "") + path]
        let result = try runCommand(
            ["/usr/bin/curl", "-s", "-X", method, "-w", "\n%{http_code}"] + arguments, timeout: readinessCeiling)
        let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false)
        return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
    }

    /// The value of the series `name{labels}` (exactly as printed), or nil.
    private func value(_ text: String, _ series: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
    }

    private func promtool(_ text: String) throws -> (Int32, String) {
        let result = try runCommand(["/usr/bin/promtool", "check", "metrics"], input: text, mergingErrors: true)
        return (result.status, result.output)
    }

    @Test func aScrapeCountsAdvertisementsReadersAndClientsAndPassesPromtool() async throws {
        let port = try MosquittoBroker.freePort()
        let harness = try await DaemonHarness(config: "[metrics]\nlisten = \"127.0.0.1:\(port)\"\n")
        try await harness.start()
        defer { _ = harness.stop() }
        _ = try await harness.waitForStatus { $0["isScanning"]?.bool == true }
        try await harness.mock.addDevice(DaemonHarness.readerAddress, alias: "Front door")
        try await harness.advertise(payload: DaemonEndToEndTests.payload, rssi: -69)
        try await harness.mock.addDevice("00:BB:01:00:00:07")
        try await harness.advertise(payload: [0x09, 0x01], rssi: -50, path: "/org/bluez/hci0/dev_00_BB_01_00_00_07")
        _ = try await harness.waitForStatus { $0["refusedAdvertisements"]?.int == 1 && $0["readerCount"]?.int == 1 }
        let held = try harness.connect()
        _ = try held.call("status.get").get()

        let (status, text) = try scrape(["http://127.0.0.1:\(port)"])
        #expect(status == 200)
        #expect((value(text, "accessd_advertisements_total") ?? 0) >= 2, "\(text)")
        #expect(value(text, "accessd_advertisements_refused_total") == 1)
        #expect(value(text, "accessd_readers_known") == 1)
        #expect(value(text, "accessd_readers_in_auto_range") == 1)
        #expect((value(text, "accessd_socket_clients") ?? 0) >= 1)
        #expect(value(text, "accessd_scanning") == 1)
        #expect((value(text, #"accessd_events_total{kind="reader.updated"}"#) ?? 0) >= 1)
        #expect((value(text, "process_resident_memory_bytes") ?? 0) > 1_000_000)
        #expect(value(text, #"accessd_build_info{version="\#(AccessDaemon.version)"}"#) == 1)
        let (code, report) = try promtool(text)
        #expect(code == 0, "promtool check metrics: \(report)\n\(text)")

        // A counter only grows: a second scrape after nothing new is the same.
        let (_, again) = try scrape(["http://127.0.0.1:\(port)"])
        #expect(value(again, "accessd_advertisements_refused_total") == 1)
        #expect(try scrape(["http://127.0.0.1:\(port)"], path: "/").0 == 404)
        #expect(try scrape(["http://127.0.0.1:\(port)"], method: "POST").0 == 405)
    }

    @Test func aUnixSocketServesTheSameAndABusyPortLeavesAccessdRunning() async throws {
        let harness = try await DaemonHarness()
        let socketPath = harness.directory + "/metrics.sock"
        try harness.writeConfig("[metrics]\nlisten = \"\(socketPath)\"\n")
        try await harness.start()
        let (status, text) = try scrape(["--unix-socket", socketPath, "http://localhost"])
        #expect(status == 200 && text.contains("accessd_uptime_seconds"))
        _ = harness.stop()

        // The port is taken: accessd says so and goes on serving doors.
        let (blocker, busyPort) = try LoopbackPort.bound()
        defer { close(blocker) }
        listen(blocker, 1)
        try harness.writeConfig("[metrics]\nlisten = \"127.0.0.1:\(busyPort)\"\n")
        try await harness.start()
        try await Task.sleep(for: .milliseconds(500))
        #expect(harness.daemon?.isRunning == true)
        #expect(harness.log.contains("metrics cannot be served"), "\(harness.log)")
        #expect(harness.stop() == 0)
    }

    /// Exchanges run by the shell over the fake central become the exchange counter and the
    /// phase histograms, labelled as docs/operations.md says: `operation` is `access`,
    /// `actions.list` or `actions.perform` (issue #31: `access.completed` carried no
    /// operation, so every exchange was counted as `access`, and a test fed a hand-made
    /// payload the daemon never sent).
    @Test func realExchangesFillTheExchangeCounterByOperationAndThePhaseHistograms() async throws {
        let shell = try ShellHarness()
        try await shell.start()
        var configuration = shell.readerConfiguration()
        configuration.actions = [ReaderAction(id: 2, name: "Arm")]
        try await shell.readerAdvertises(FakeReader(configuration), flags: [.manualConnectEnabled, .actionsEnabled])
        _ = try await shell.call("access.request", ["reader": "2A01"]).get()
        _ = try await shell.call("actions.list", ["reader": "2A01"]).get()
        _ = try await shell.call("actions.perform", ["reader": "2A01", "action": 2]).get()
        try await shell.waitUntil("three exchanges journalled") { try shell.events("access.completed").count == 3 }
        let metrics = DaemonMetrics()
        for event in try shell.store.events(after: 0) { metrics.record(event) }
        await shell.stop()

        let text = String(decoding: metrics.render(), as: UTF8.self)
        for (operation, outcome, result) in [
            ("access", "decided", "granted"), ("actions.list", "actionsListed", "none"),
            ("actions.perform", "actionPerformed", "granted"),
        ] {
            let series =
                #"accessd_exchanges_total{origin="manual",operation="\#(operation)",outcome="\#(outcome)",result="\#(result)"}"#
            #expect(value(text, series) == 1, "\(series) in\n\(text)")
        }
        #expect(value(text, #"accessd_exchange_phase_seconds_count{phase="total"}"#) == 3)
        #expect(value(text, #"accessd_exchange_phase_seconds_count{phase="connect"}"#) == 3)
        // Manual exchanges have no detection phase.
        #expect(value(text, #"accessd_exchange_phase_seconds_count{phase="detection"}"#) == nil)
        #expect(value(text, #"accessd_events_total{kind="access.completed"}"#) == 3)
        let (code, report) = try promtool(text)
        #expect(code == 0, "\(report)")
    }

    /// docs/operations.md's alert rules and scrape config are valid Prometheus files, and
    /// name only metrics accessd serves.
    @Test func theDocumentedAlertRulesAreValidAndNameServedMetrics() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/operations.md")
        let text = try String(contentsOf: url, encoding: .utf8)
        let blocks = text.components(separatedBy: "```yaml\n").dropFirst().compactMap {
            $0.components(separatedBy: "```").first
        }
        let rules = try #require(blocks.first { $0.contains("groups:") })
        let path = NSTemporaryDirectory() + "accessd-rules-\(UUID().uuidString).yml"
        try rules.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let check = try runCommand(["/usr/bin/promtool", "check", "rules", path], mergingErrors: true)
        #expect(check.status == 0, "\(check.output)")
        for name in [
            "accessd_bluetoothd_present", "accessd_adapter_present", "accessd_advertisements_total",
            "accessd_exchanges_total", "accessd_mqtt_backlog_events", "accessd_reader_problem",
        ] {
            #expect(rules.contains(name))
            #expect(DaemonMetrics.help[name] != nil, "\(name) is not served")
        }
        let scrape = try #require(blocks.first { $0.contains("scrape_configs:") })
        let config = NSTemporaryDirectory() + "accessd-prometheus-\(UUID().uuidString).yml"
        try scrape.write(toFile: config, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: config) }
        let checkConfig = try runCommand(["/usr/bin/promtool", "check", "config", config], mergingErrors: true)
        #expect(checkConfig.status == 0, "\(checkConfig.output)")
    }
}
