import AccessJSON
import ArgumentParser
import ControlSocket

#if canImport(Glibc)
    import Glibc
#endif

/// `accessctl probe READER`: for a field engineer at a door. Listens to the reader for some
/// seconds (`readers.probe`: advertising interval, RSSI, path loss, the range here), then tries
/// a few exchanges that open nothing (the actions listing, or access with --access), and ends
/// with a verdict; `--calibrate` suggests thresholds that open from where it stands.
struct Probe: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a reader from where you stand: its advertising, the radio here, trial exchanges (operator).",
        discussion: """
            Listens for --seconds (default 10) to every advertisement of READER, then makes --trials \
            exchanges (default 3) that list the reader's actions and open no door (--access: real \
            accesses instead), each with its timings. Exit status 0 when the verdict is OK, 1 otherwise. \
            --calibrate: stand where the door should open; it listens and suggests the reader's \
            auto_connect_path_loss for this spot (and the same as an offset on this kiosk), without trials.
            """)
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The reader id (as `accessctl readers` prints it).") var reader: String
    @Option(help: ArgumentHelp("Seconds to listen (1 to 60).", valueName: "seconds")) var seconds: Double = 10
    @Option(help: ArgumentHelp("Trial exchanges after listening (0 to 20).", valueName: "count")) var trials: Int = 3
    @Flag(help: "Trials are real accesses (the door opens) instead of action listings.") var access = false
    @Flag(help: "Suggest thresholds that open from here; no trials.") var calibrate = false

    func validate() throws {
        guard (1...60).contains(seconds) else { throw ValidationError("--seconds is 1 to 60") }
        guard (0...20).contains(trials) else { throw ValidationError("--trials is 0 to 20") }
    }

    func run() throws {
        let connection = try options.connect()
        if isatty(2) == 1 && !options.json { printError("listening to reader \(reader) for \(Int(seconds)) s…") }
        let (probe, raw) = try options.call(
            connection, ControlCalls.ReadersProbe.self, ProbeParams(reader: reader, seconds: seconds))
        var problems = ProbeVerdict.problems(probe)
        var trialResults: [JSONValue] = []
        var lines = ProbeText.lines(probe)
        if !calibrate && probe.advertisements > 0 && trials > 0 {
            lines.append("  trials:")
            var totals: [Double] = []
            for index in 1...trials {
                if lines.last?.hasPrefix("    skipped:") == true { break }
                if isatty(2) == 1 && !options.json { printError("trial \(index) of \(trials)…") }
                let method: ControlMethod = access ? .accessRequest : .actionsList
                connection.answerTimeout = .seconds(60)
                let result = try? connection.call(method.rawValue, ["reader": .string(reader)])
                switch result {
                case .success(let value)?:
                    trialResults.append(value)
                    let answer = try? value.decode(ExchangeAnswer.self)
                    if let total = answer?.timings?.totalMs { totals.append(total) }
                    lines.append("    \(index): " + (answer.map(ProbeText.trial) ?? value.jsonText))
                case .failure(let error)? where error.data?["cause"]?.string == "actionsNotOffered" && !access:
                    lines.append(
                        "    skipped: the reader offers no actions, the one exchange that opens no door "
                            + "(--access tries real accesses)")
                case .failure(let error)?:
                    trialResults.append([
                        "error": .string(error.data?["error"]?.string ?? "failed"), "message": .string(error.message),
                    ])
                    lines.append("    \(index): \(error.message)")
                case nil:
                    trialResults.append(["error": "timeout", "message": "no answer within 60 s"])
                    lines.append("    \(index): no answer within 60 s")
                }
            }
            let failed = trialResults.count - totals.count
            if failed > 0 { problems.append("\(failed) of \(trialResults.count) trial exchanges failed") }
            if !totals.isEmpty {
                let sorted = totals.sorted()
                let middle = sorted.count / 2
                let median = sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
                lines.append(
                    "  exchanges:       \(totals.count) of \(trialResults.count) answered; median \(Int(median.rounded())) ms, "
                        + "slowest \(Int(sorted[sorted.count - 1])) ms")
            }
        }
        if calibrate { lines += ProbeText.calibration(probe) }
        lines.append(problems.isEmpty ? "verdict: OK" : "verdict: \(problems.joined(separator: "; "))")
        if options.json {
            print(
                JSONValue.object([
                    "probe": raw, "trials": .array(trialResults), "ok": .bool(problems.isEmpty),
                    "problems": .array(problems.map { .string($0) }),
                ]).jsonText)
        } else {
            print(lines.joined(separator: "\n"))
        }
        if !problems.isEmpty { throw ExitCode(Exit.refused) }
    }
}

/// What is wrong with what was heard, in words; nothing when all is well.
enum ProbeVerdict {
    static func problems(_ probe: ProbeAnswer) -> [String] {
        guard probe.advertisements > 0 else {
            return ["not heard in \(Int(probe.seconds)) s (wrong id? out of range? see accessctl readers)"]
        }
        var problems: [String] = []
        if let interval = probe.intervalMs, interval.median > 1000 {
            problems.append(
                "advertises only every \(Int(interval.median)) ms (a walk-up is seen late; 100-300 ms is usual)")
        }
        if let loss = probe.rawPathLoss, loss.deviation > 6 {
            problems.append(
                "the radio here is noisy (path loss ± \(ProbeText.decimal(loss.deviation)) dB): expect late or flapping ranges"
            )
        }
        if probe.range == "out" { problems.append("out of manual range here") }
        return problems
    }
}

/// The probe for people.
enum ProbeText {
    static func lines(_ probe: ProbeAnswer) -> [String] {
        var lines = ["reader \(probe.reader)\(probe.name.map { " (\($0))" } ?? "")"]
        func row(_ label: String, _ value: String) { lines.append("  " + (label + ":").padding(17) + value) }
        guard probe.advertisements > 0 else {
            row("advertisements", "none in \(Int(probe.seconds)) s")
            return lines
        }
        var heard = "\(probe.advertisements) in \(Int(probe.seconds)) s"
        if let interval = probe.intervalMs {
            heard +=
                ", every \(Int(interval.median.rounded())) ms (jitter \(Int(interval.deviation.rounded())) ms, "
                + "\(Int(interval.min.rounded()))…\(Int(interval.max.rounded())) ms)"
        }
        if probe.dropped > 0 { heard += "; \(probe.dropped) more not kept" }
        row("advertisements", heard)
        if let rssi = probe.rssi {
            row(
                "rssi",
                "\(Int(rssi.median)) dBm median (\(Int(rssi.min))…\(Int(rssi.max)))"
                    + (probe.txPower.map { ", transmit power \($0) dBm" } ?? ""))
        }
        if let raw = probe.rawPathLoss, let smoothed = probe.pathLoss {
            row(
                "path loss",
                "\(decimal(raw.median)) dB median (\(decimal(raw.min))…\(decimal(raw.max)), ± \(decimal(raw.deviation))), "
                    + "smoothed \(decimal(smoothed.max == smoothed.min ? smoothed.max : smoothed.median)) dB")
        }
        if let auto = probe.autoConnectPathLoss, let manual = probe.manualConnectPathLoss {
            var here =
                probe.range == "auto" ? "in auto range" : probe.range == "manual" ? "in manual range" : "out of range"
            if probe.range == "auto", let smoothed = probe.pathLoss?.median, smoothed > Double(auto) {
                // Hysteresis: a reader that was in auto range stays there until it is clearly out.
                here += " (still: it leaves auto range only past [range] exit_margin)"
            }
            row("thresholds", "auto \(auto) dB, manual \(manual) dB: here \(here)")
        }
        let widest = probe.histogram.map(\.count).max() ?? 1
        for bin in probe.histogram {
            let bar = String(repeating: "#", count: max(1, bin.count * 30 / max(1, widest)))
            lines.append(
                "    \(String(bin.fromDb).leftPadded(to: 4))…\(String(bin.fromDb + 2).leftPadded(to: 3)) dB  \(bar) \(bin.count)"
            )
        }
        return lines
    }

    static func trial(_ answer: ExchangeAnswer) -> String {
        guard answer.outcome == "actionsListed" else { return describeOutcome(answer) }
        return "actions listed (\(answer.actions?.count ?? 0))" + (answer.timings.map(describeTimings) ?? "")
    }

    static func calibration(_ probe: ProbeAnswer) -> [String] {
        guard let calibration = probe.calibration, let raw = probe.rawPathLoss else {
            return ["  calibration:     needs 5 advertisements or more; stand still and listen longer (--seconds)"]
        }
        var lines = [
            "  calibration:     to open from here, auto_connect_path_loss = \(calibration.autoConnectPathLoss) "
                + "(path loss here \(decimal(raw.median)) dB ± \(decimal(raw.deviation)), margin \(decimal(calibration.marginDb)) dB), "
                + "manual_connect_path_loss = \(calibration.manualConnectPathLoss) in the reader's configuration"
        ]
        if calibration.kioskOffsetDb != 0 {
            let offset = calibration.kioskOffsetDb
            lines.append(
                "                   or on this kiosk only: accessctl readers scope \(probe.reader) --offset \(decimal(offset))"
            )
        }
        return lines
    }

    static func decimal(_ value: Double) -> String {
        let tenths = (value * 10).rounded() / 10
        return tenths == tenths.rounded() ? String(Int(tenths)) + ".0" : String(tenths)
    }
}
