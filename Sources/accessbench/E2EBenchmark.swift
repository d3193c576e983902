import ArgumentParser
import Foundation

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
        help: """
            The reader's protocol version: 3 signs with the controller's own certified key, 2 keeps a \
            challenge standing on the held link, 1 does not (default 2; 1 and 2 need the site key in \
            the reader, which the site then gives).
            """)
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
        guard (1...3).contains(readerVersion) else { throw ValidationError("--reader-version 1, 2 or 3") }
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
