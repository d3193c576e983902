import AccessJSON
import ArgumentParser
import BlueZTestSupport
import ControlSocket
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Inside the bluez-lab VM (Bumble backend): repeated approaches to a `readersim` reader,
/// the lab's radio ramping the RSSI the kiosk's adapter hears, first with accessd
/// (automatic access), then with a bleak script doing the same exchange. Reports the time
/// from the first advertisement whose RSSI puts the reader in auto-connect range to the
/// decision, for both, and accessd's phases.
struct E2EBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "e2e",
        abstract: "Approach-to-decision time through real BlueZ, accessd against a bleak script (run inside the lab).",
        discussion: """
            ../shared/bluez-lab/lab --backend bumble --controllers 2 --bluetoothd-args "-E -P bap,mcp,vcp" -- \
            .build/release/accessbench e2e. The bleak baseline needs a Python with bleak and \
            cryptography (--python; default: $BLEAK_PYTHON or ~/.cache/bluez-lab/bleak-venv/bin/python, \
            made on the host with `python3 -m venv --system-site-packages DIR && DIR/bin/pip install bleak`).
            """)

    @Option(help: "Approaches per client.") var approaches = 20
    @Option(help: "Python with bleak for the baseline.") var python: String?
    @Flag(help: "Measure accessd only.") var noBleak = false
    @Option(
        help:
            "Manual requests (access.request → decision) to measure with a cold link and over a held link, after the approaches."
    )
    var manual = 0
    @Option(help: "accessd's [range] smoothing for this run (default: accessd's, 0.2).") var smoothing: Double?
    @Option(help: "accessd's [range] approach_smoothing for this run (default: accessd's, 0.5).") var approachSmoothing:
        Double?
    @Option(help: "accessd's [range] median_window for this run (default: the filter's, 3).") var medianWindow: Int?
    @Option(
        help: "The reader's protocol version: 2 keeps a challenge standing on the held link, 1 does not (default 2).")
    var readerVersion = 2
    @Option(help: "accessd's [access] selection_window in seconds for this run (default: accessd's, 0.2).")
    var selectionWindow: Double?
    @Flag(help: "Run accessd with [access] connect_early = false (connect only at auto range, the default before 0.3).")
    var connectLate = false
    var connectEarly: Bool { !connectLate }
    @Flag(help: "Print one JSON object instead of a summary.") var json = false

    static let reader = "00002A01"

    func run() async throws {
        guard ProcessInfo.processInfo.environment["LAB_BACKEND"] == "bumble" else {
            throw ValidationError("run inside the lab with the Bumble backend (see --help)")
        }
        guard (3...500).contains(approaches) else { throw ValidationError("--approaches 3…500") }
        let home = ProcessInfo.processInfo.environment["HOME"] ?? "/root"
        let bleakPython =
            python ?? ProcessInfo.processInfo.environment["BLEAK_PYTHON"]
            ?? home + "/.cache/bluez-lab/bleak-venv/bin/python"
        if !noBleak && !FileManager.default.isExecutableFile(atPath: bleakPython) {
            throw ValidationError("no bleak Python at \(bleakPython) (see --help, or --no-bleak)")
        }
        if let smoothing, !(0.01...1).contains(smoothing) { throw ValidationError("--smoothing 0.01…1") }
        if let approachSmoothing, !(0.01...1).contains(approachSmoothing) {
            throw ValidationError("--approach-smoothing 0.01…1")
        }
        guard (1...2).contains(readerVersion) else { throw ValidationError("--reader-version 1 or 2") }
        if let medianWindow, !(1...5).contains(medianWindow) { throw ValidationError("--median-window 1…5") }
        if let selectionWindow, !(0...2).contains(selectionWindow) { throw ValidationError("--selection-window 0…2") }
        var access = ""
        var range = ""
        if let selectionWindow { access += "selection_window = \(selectionWindow)\n" }
        if connectLate { access += "connect_early = false\n" }
        if let smoothing { range += "smoothing = \(smoothing)\n" }
        if let approachSmoothing { range += "approach_smoothing = \(approachSmoothing)\n" }
        if let medianWindow { range += "median_window = \(medianWindow)\n" }
        let bench = try await LabBench(access: access, range: range, readerVersion: readerVersion)
        defer { bench.stop() }

        var accessd: [[String: Double]] = []
        var failures = 0
        for approach in 1...approaches {
            switch try await bench.accessdApproach() {
            case .success(let timings):
                accessd.append(timings)
                log("accessd approach \(approach): \(Int(timings["totalMs"] ?? .nan)) ms")
            case .failure(let reason):
                // Counted and reported, not hidden: BlueZ sometimes loses a link during
                // service resolution (bluez-lab README), and accessd's retries may run out.
                failures += 1
                log("accessd approach \(approach): failed: \(reason.message)")
            }
        }
        var manualTimes: [Bool: [Double]] = [false: [], true: []]
        for overHeldLink in [false, true] where manual > 0 {
            for request in 1...manual {
                let time = try await bench.manualRequest(overHeldLink: overHeldLink)
                if let time { manualTimes[overHeldLink, default: []].append(time) }
                log(
                    "manual request \(request) \(overHeldLink ? "over a held link" : "cold"): "
                        + (time.map { "\(Int($0.rounded())) ms" } ?? "failed") + " accessd: \(bench.phases)")
            }
        }
        bench.stopDaemon()
        var bleak: [Double] = []
        var bleakPhases: [[String: Double]] = []
        var bleakFailures = 0
        if !noBleak {
            let keyFile = try bench.registerBleak(python: bleakPython)
            for approach in 1...approaches {
                do {
                    let phases = try await bench.bleakApproach(python: bleakPython, keyFile: keyFile)
                    bleak.append(phases["totalMs"] ?? .nan)
                    bleakPhases.append(phases)
                    log("bleak approach \(approach): \(Int(phases["totalMs"] ?? .nan)) ms")
                } catch {
                    // The script's own failures (bleak: "failed to discover services, device
                    // disconnected") are counted like accessd's, not allowed to end the run.
                    bleakFailures += 1
                    log("bleak approach \(approach): failed: \(String(describing: error).suffix(300))")
                }
            }
        }
        report(
            accessd: accessd, failures: failures, bleak: bleak, bleakFailures: bleakFailures, bleakPhases: bleakPhases)
        if manual > 0 {
            func median(_ values: [Double]) -> String {
                let sorted = values.sorted()
                return sorted.isEmpty ? "n/a" : "\(Int(sorted[sorted.count / 2].rounded())) ms"
            }
            let bleakLink = bleakPhases.compactMap { phases in
                phases["connectMs"].flatMap { c in phases["exchangeMs"].map { c + $0 } }
            }
            print(
                "manual: access.request → decision, \(manual) each: cold link median \(median(manualTimes[false] ?? [])) "
                    + "(\(manualTimes[false]?.count ?? 0) granted), over a held link median \(median(manualTimes[true] ?? [])) "
                    + "(\(manualTimes[true]?.count ?? 0) granted); bleak script connect + exchange median \(median(bleakLink))"
            )
        }
    }

    private func log(_ text: String) {
        let line = text + "\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
    }

    private func report(
        accessd: [[String: Double]], failures: Int, bleak: [Double], bleakFailures: Int,
        bleakPhases: [[String: Double]]
    ) {
        func sorted(_ key: String, _ rows: [[String: Double]]) -> [Double] {
            rows.compactMap { $0[key] }.filter { !$0.isNaN }.sorted()
        }
        func pct(_ values: [Double], _ p: Double) -> Double {
            values.isEmpty ? .nan : values[min(values.count - 1, Int(Double(values.count) * p))]
        }
        func number(_ value: Double) -> String { value.isNaN ? "null" : String(Int(value.rounded())) }
        let total = sorted("totalMs", accessd)
        let bleakSorted = bleak.filter { !$0.isNaN }.sorted()
        let phases = ["detectionMs", "connectMs", "resolveMs", "exchangeMs"]
        if json {
            var fields = [
                "\"approaches\":\(accessd.count + failures)", "\"failures\":\(failures)",
                "\"bleakFailures\":\(bleakFailures)",
                "\"smoothing\":\(smoothing.map { "\($0)" } ?? "null")",
                "\"approachSmoothing\":\(approachSmoothing.map { "\($0)" } ?? "null")",
                "\"readerVersion\":\(readerVersion)", "\"medianWindow\":\(medianWindow.map { "\($0)" } ?? "null")",
                "\"selectionWindowS\":\(selectionWindow.map { "\($0)" } ?? "null")", "\"connectEarly\":\(connectEarly)",
                "\"medianMs\":\(number(pct(total, 0.5)))",
                "\"p95Ms\":\(number(pct(total, 0.95)))", "\"bleakMedianMs\":\(number(pct(bleakSorted, 0.5)))",
                "\"bleakP95Ms\":\(number(pct(bleakSorted, 0.95)))",
            ]
            for phase in phases {
                let name = phase.replacingOccurrences(of: "Ms", with: "")
                fields.append("\"\(name)MedianMs\":\(number(pct(sorted(phase, accessd), 0.5)))")
                fields.append(
                    "\"bleak\(name.prefix(1).uppercased() + name.dropFirst())MedianMs\":\(number(pct(sorted(phase, bleakPhases), 0.5)))"
                )
            }
            print("{\"suite\":\"e2e\",\"results\":[{\(fields.joined(separator: ","))}]}")
            return
        }
        print(
            "e2e: \(accessd.count + failures) approaches each (accessd failures: \(failures)); first in-range advertisement → decision (ms)"
        )
        print(
            "  accessd smoothing \(smoothing.map { "\($0)" } ?? "default"), approach smoothing "
                + "\(approachSmoothing.map { "\($0)" } ?? "default"), median window \(medianWindow.map { "\($0)" } ?? "default"), selection window \(selectionWindow.map { "\($0) s" } ?? "default"), "
                + "connect early \(connectEarly ? "on" : "off"), reader protocol version \(readerVersion)")
        print("  accessd  median \(number(pct(total, 0.5)))  p95 \(number(pct(total, 0.95)))")
        for phase in phases {
            print(
                "    \(phase.replacingOccurrences(of: "Ms", with: "")): median \(number(pct(sorted(phase, accessd), 0.5)))"
                    + "  (bleak \(number(pct(sorted(phase, bleakPhases), 0.5))))")
        }
        if !bleakSorted.isEmpty {
            print(
                "  bleak    median \(number(pct(bleakSorted, 0.5)))  p95 \(number(pct(bleakSorted, 0.95)))  (failures: \(bleakFailures))"
            )
            print(
                "  ratio (bleak / accessd): median \(String(format: "%.2f", pct(bleakSorted, 0.5) / pct(total, 0.5))), "
                    + "p95 \(String(format: "%.2f", pct(bleakSorted, 0.95) / pct(total, 0.95)))")
        }
        // Per approach, in order, for the record (docs/performance.md keeps them).
        print("  accessd per approach: " + accessd.map { number($0["totalMs"] ?? .nan) }.joined(separator: " "))
        print(
            "  accessd exchange per approach: "
                + accessd.map { number($0["exchangeMs"] ?? .nan) }.joined(separator: " "))
        if !bleak.isEmpty { print("  bleak per approach: " + bleak.map(number).joined(separator: " ")) }
    }
}

/// The processes of one e2e run: a site, a reader on hci0, accessd on hci1, the radio.
final class LabBench: @unchecked Sendable {
    let directory = "/tmp/accessbench-e2e-\(getpid())"
    let binaries = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    let radio = LabRadio()
    var site: ChildProcess?
    var readers: ChildProcess?
    var daemon: ChildProcess?
    var events: ControlConnection?
    var siteURL = ""
    /// The timings of the last manual exchange, as accessd's access.completed gave them.
    var phases = ""

    var readersim: String { binaries.appendingPathComponent("readersim").path }
    var siteDatabase: String { directory + "/site.sqlite" }
    var socketPath: String { directory + "/a.sock" }
    var baselineScript: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Baseline/bleak_approach.py")
            .path
    }

    /// `access` and `range`: extra lines for accessd's `[access]` and `[range]` sections.
    init(access: String = "", range: String = "", readerVersion: Int = 2) async throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try radio.send("reset")
        try radio.off("*", "*")
        _ = try run([readersim, "site", "init", "--db", siteDatabase, "--tag", "5117e001"])
        site = try ChildProcess(
            [readersim, "site", "serve", "--db", siteDatabase, "--listen", "127.0.0.1:0"],
            output: directory + "/site.out")
        siteURL = try await waitForLine(directory + "/site.out") { $0["url"] as? String }
        // The reader controller's key, enrolled at the site (docs/site-api.md §7).
        let keyFile = directory + "/reader.key"
        let made = try run([readersim, "reader-key", keyFile])
        guard
            let key = (try JSONSerialization.jsonObject(with: Data(made.utf8)) as? [String: Any])?["publicKey"]
                as? String
        else { throw ValidationError("readersim reader-key printed no key") }
        _ = try run([readersim, "site", "reader", "add", "--db", siteDatabase, "--name", "bench", "--public-key", key])
        try """
        [site]
        url = "\(siteURL)"
        key = "\(keyFile)"
        [front]
        id = "2A01"
        adapter = "hci0"
        interval_ms = 100
        auto_connect_path_loss = 20
        manual_connect_path_loss = 40
        protocol_version = \(readerVersion)
        """.write(toFile: directory + "/readers.toml", atomically: true, encoding: .utf8)
        readers = try ChildProcess(
            [readersim, "readers", "--config", directory + "/readers.toml"], output: directory + "/readers.out")
        _ = try await waitForLine(directory + "/readers.out") { $0["event"] as? String == "advertising" ? true : nil }
        // cooldown = 1: approaches follow each other within seconds here; the default 10 s
        // once-per-approach hold-off would be measured instead of the approach.
        try
            "[bluetooth]\nadapter = \"hci1\"\n[access]\nautomatic = true\ncooldown = 1\n\(access)[range]\nstale_timeout = 3\n\(range)[log]\nlevel = \"notice\"\n"
            .write(toFile: directory + "/accessd.toml", atomically: true, encoding: .utf8)
        let daemon = try ChildProcess(
            [
                binaries.appendingPathComponent("accessd").path, "--config", directory + "/accessd.toml",
                "--socket", socketPath, "--state-dir", directory + "/state",
            ],
            output: directory + "/accessd.log")
        self.daemon = daemon
        for _ in 0..<1500 {
            if let connection = try? ControlConnection(path: socketPath), (try? connection.call("status.get")) != nil {
                break
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let client = try ControlConnection(path: socketPath)
        let url = try invitation()
        _ = try client.call("credentials.register", ["url": .string(url)]).get()
        // The reader has the credential once the site's next page says so.
        _ = try await waitForLine(directory + "/readers.out") {
            $0["event"] as? String == "provisioned" && ($0["credentials"] as? Int ?? 0) >= 1 ? true : nil
        }
        let events = try ControlConnection(path: socketPath)
        _ = try events.call(
            "events.subscribe",
            [
                "kinds": [
                    .string(EventKind.accessCompleted.rawValue),
                    .string(EventKind.readerUnavailable.rawValue),
                ]
            ]
        ).get()
        self.events = events
    }

    func invitation() throws -> String {
        let output = try run([
            readersim, "site", "invite", "--db", siteDatabase, "--name", "Bench", "--json", "--url", siteURL,
        ])
        guard let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any],
            let url = object["url"] as? String
        else { throw ValidationError("readersim site invite printed no URL") }
        return url
    }

    /// Out of range until accessd forgets the reader, then a walk up: -100 → -60 dBm in 3 s.
    /// An approach that does not end granted is a failure with accessd's event as reason.
    func accessdApproach() async throws -> Result<[String: Double], ValidationError> {
        guard let events else { throw ValidationError("accessd is not running") }
        try radio.off("hci1", "hci0")
        while let client = try? ControlConnection(path: socketPath),
            let readers = try? client.call("readers.list").get()["readers"]?.array, !readers.isEmpty
        {
            try await Task.sleep(for: .milliseconds(200))
        }
        try await Task.sleep(for: .seconds(1))
        try radio.ramp("hci1", "hci0", from: -100, to: -60, seconds: 3)
        let deadline = ContinuousClock.now + .seconds(40)
        while ContinuousClock.now < deadline {
            guard events.waitReadable(timeout: .milliseconds(200)) else { continue }
            guard case .accessCompleted(let answer)? = ControlEvent(eventNotification: try events.nextNotification()),
                answer.origin == "automatic"
            else { continue }
            guard answer.granted == true, let encoded = answer.timings.flatMap({ try? JSONValue(encoding: $0) }),
                case .object(let timings) = encoded
            else {
                return .failure(ValidationError(answer.json.jsonText))
            }
            return .success(timings.compactMapValues { $0.number })
        }
        throw ValidationError("no automatic access within 40 s")
    }

    func stopDaemon() {
        events = nil
        daemon?.stop(grace: 10)
        daemon = nil
    }

    func registerBleak(python: String) throws -> String {
        let keyFile = directory + "/bleak-key.json"
        _ = try run([python, baselineScript, "register", "--url", try invitation(), "--key-file", keyFile])
        return keyFile
    }

    /// A fresh script process per approach, as a person running it would; the ramp starts
    /// once it scans.
    func bleakApproach(python: String, keyFile: String) async throws -> [String: Double] {
        try radio.off("hci1", "hci0")
        try await Task.sleep(for: .seconds(4))
        let output = directory + "/bleak-\(UInt32.random(in: 0...UInt32.max)).out"
        let process = try ChildProcess(
            [
                python, baselineScript, "approach", "--key-file", keyFile, "--reader",
                E2EBenchmark.reader, "--adapter", "hci1",
            ], output: output)
        defer { process.stop() }
        _ = try await waitForLine(output, timeout: .seconds(60)) { $0["scanning"] as? Double }
        try radio.ramp("hci1", "hci0", from: -100, to: -60, seconds: 3)
        let stamps = try await waitForLine(output, timeout: .seconds(60)) { $0["timestamps"] as? [String: Double] }
        guard let detected = stamps["detected"], let connected = stamps["connected"], let decided = stamps["decided"]
        else {
            throw ValidationError("the bleak script reported no timestamps")
        }
        let stopped = stamps["scanStopped"] ?? detected
        return [
            "totalMs": (decided - detected) * 1000, "detectionMs": (stopped - detected) * 1000,
            "connectMs": (connected - stopped) * 1000, "exchangeMs": (decided - connected) * 1000,
        ]
    }

    func stop() {
        stopDaemon()
        readers?.stop()
        site?.stop()
        try? radio.off("*", "*")
    }

    private func run(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ValidationError("\(arguments[0]) failed") }
        return String(decoding: data, as: UTF8.self)
    }

    private func waitForLine<T>(_ path: String, timeout: Duration = .seconds(30), _ pick: ([String: Any]) -> T?)
        async throws -> T
    {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") {
                if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let value = pick(object)
                {
                    return value
                }
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ValidationError(
            "nothing expected in \(path): \((try? String(contentsOfFile: path, encoding: .utf8)) ?? "")")
    }
}
