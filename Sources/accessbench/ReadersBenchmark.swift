import AccessJSON
import ArgumentParser
import BlueZTestSupport
import ControlSocket
import Foundation

/// `accessbench readers`: accessd's memory with many readers heard and its CPU with many
/// advertising (issue #15, item 4). The release accessd on a private bus with dbusmock's
/// bluez5 template; readers appear as Device1 objects and advertise as bluetoothd reports
/// it, a `PropertiesChanged` of `RSSI` and `ServiceData` per advertisement.
struct ReadersBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "readers",
        abstract: "accessd's resident memory with 1 and N readers heard, and CPU with M readers advertising at R Hz."
    )

    @Option(help: "Readers heard for the memory figure.") var many = 1000
    @Option(help: "Readers advertising for the CPU figure.") var advertising = 100
    @Option(help: "Advertisements per second per reader for the CPU figure.") var rate = 10
    @Option(help: "Seconds of advertising measured.") var seconds = 20
    @Option(
        name: .customLong("quiet-seconds"),
        help:
            "Then seconds with no advertisement, as a kiosk's nights (the discovery watchdog restarts scanning), before a last figure."
    )
    var quietSeconds = 0
    @Option(
        help: "The accessd to measure (default: the one built beside accessbench; the package's is /usr/sbin/accessd).")
    var accessd: String?
    @Option(
        help: ArgumentHelp(
            "Measure the installed accessd as this systemd unit runs it (e.g. accessd.service; needs root).",
            discussion:
                "Its user, sandbox, environment and state directory; for the run a drop-in in /run/systemd/system restarts it on the benchmark's bus with --config (default /etc/accessd/accessd.toml, the benchmark's settings added); at the end it is removed and the unit restarted as it was."
        ))
    var unit: String?
    @Option(
        help: ArgumentHelp(
            "accessd's configuration to start from, e.g. config/accessd.toml as the package installs it (default: the built-in defaults).",
            discussion:
                "The benchmark sets [metrics] listen, and [socket]'s groups when this machine lacks the package's."))
    var config: String?
    @Option(
        name: .customLong("state-dir"),
        help:
            "accessd's state directory, kept after the run: a second run on it measures a restart, as a kiosk's every start after its first (default: a new, empty one)."
    )
    var stateDirectory: String?

    func run() async throws {
        // Metrics on a Unix socket: its advertisement counter says how many accessd took in.
        // Logging at the shipped level (info), as kiosks run it: the code that writes those
        // lines is resident too (at "warning" this benchmark missed 1-2 MB of it).
        // Under the unit, where its RuntimeDirectory lets accessd create a socket.
        let metricsSocket =
            unit == nil
            ? FileManager.default.temporaryDirectory.appendingPathComponent("accessbench-\(getpid()).metrics").path
            : "/run/accessd/accessbench-\(getpid()).metrics"
        let groups = Self.roleGroups()
        let config =
            config
            ?? (unit != nil && access("/etc/accessd/accessd.toml", R_OK) == 0 ? "/etc/accessd/accessd.toml" : nil)
        let base = try config.map { try String(contentsOfFile: $0, encoding: .utf8) } ?? ""
        let text = Self.configuration(base, metricsSocket: metricsSocket, groups: groups)
        let daemon: any MeasuredAccessd
        if let unit {
            guard stateDirectory == nil else {
                throw ValidationError("--state-dir: the unit keeps its own (StateDirectory=)")
            }
            daemon = try await InstalledService(unit: unit, executable: accessd ?? "/usr/sbin/accessd", config: text)
        } else {
            daemon = try await BenchDaemon(config: text, executable: accessd, stateDirectory: stateDirectory)
        }
        defer { unlink(metricsSocket) }
        defer { daemon.stop() }
        let pid = daemon.pid
        let connection = try ControlConnection(path: daemon.socketPath)
        try await Task.sleep(for: .seconds(2))
        let idle = Self.statusKB(pid, "RssAnon")
        let measured =
            unit.map { "\(accessd ?? "/usr/sbin/accessd") as \($0) runs it" } ?? accessd
            ?? "release, built beside accessbench"
        print("accessd (\(measured)), private bus, dbusmock bluez5; RSS from /proc/PID/status, CPU from /proc/PID/stat")
        print(
            "  socket roles' groups:     \(groups.operator), \(groups.admin)\(groups.standIn ? " (stand-ins: this machine lacks the package's)" : "")"
        )
        print(
            "  configuration:            \(config ?? "built-in defaults"); state directory: \(unit != nil ? "the unit's" : stateDirectory ?? "new, empty")"
        )
        print("  idle, no reader:          \(resident(pid))")

        try await daemon.mock.run(python: MockReaders.appear(1, from: 0))
        try await Self.waitForReaders(1, connection)
        try await advertiseRounds(daemon, readers: 1, rounds: 3, every: .seconds(1))
        print("  1 reader heard:           \(resident(pid))")

        try await daemon.mock.run(python: MockReaders.appear(many - 1, from: 1))
        try await Self.waitForReaders(many, connection)
        // Every reader advertises once a second for 5 s: all of them heard, filters full.
        try await advertiseRounds(daemon, readers: many, rounds: 5, every: .seconds(1))
        print(
            "  \(many) readers heard:      \(resident(pid)), anonymous \(mb(Self.statusKB(pid, "RssAnon") - idle)) over idle, "
                + "peak RSS \(mb(Self.peakKB(pid)))")
        print(
            "    resident by file:        \(Self.residentByFile(pid).prefix(6).map { "\($0.file) \(mb($0.kb))" }.joined(separator: ", "))"
        )

        // CPU: `advertising` readers at `rate` Hz, one batch every 1/rate s.
        let period = Duration.seconds(1) / rate
        let before = FleetBenchmark.cpuSeconds(pid)
        let start = ContinuousClock.now
        let sent = try await advertiseRounds(daemon, readers: advertising, rounds: seconds * rate, every: period)
        let wall = (ContinuousClock.now - start).secondsValue
        let cpu = FleetBenchmark.cpuSeconds(pid) - before
        let scrape = try runCommand(["/usr/bin/curl", "-s", "--unix-socket", metricsSocket, "http://accessd/metrics"])
            .output
        let seen =
            scrape.split(separator: "\n").first { $0.hasPrefix("accessd_advertisements_total ") }
            .map { String($0.split(separator: " ").last ?? "?") } ?? "?"
        print(
            "  \(advertising) readers at \(rate) Hz for \(Int(wall.rounded())) s: \(sent) advertisements sent "
                + "(\(Int((Double(sent) / wall).rounded()))/s), accessd CPU \(String(format: "%.1f", 100 * cpu / wall)) % of one core "
                + "(\(String(format: "%.0f", 1e6 * cpu / Double(max(sent, 1)))) µs each), accessd_advertisements_total \(seen) in all"
        )

        // What runs only after a while (the discovery watchdog after `discovery_watchdog`
        // seconds without an advertisement, the journal's and the store's upkeep) is resident
        // on a kiosk too.
        guard quietSeconds > 0 else { return }
        try await Task.sleep(for: .seconds(quietSeconds))
        _ = try connection.call("status.get")
        print("  then \(quietSeconds) s quiet:         \(resident(pid)), peak RSS \(mb(Self.peakKB(pid)))")
    }

    /// accessd's configuration: `base` (a file's text, e.g. the shipped accessd.toml) with
    /// `[metrics] listen` set to the benchmark's socket and `[socket]`'s groups to `groups`.
    /// Line by line: a key the benchmark sets is dropped from its table and the benchmark's
    /// value written under the table's header (appended when the table is absent), as TOML
    /// refuses a key given twice.
    static func configuration(
        _ base: String, metricsSocket: String,
        groups: (operator: String, admin: String, standIn: Bool)
    ) -> String {
        let settings: [String: [(key: String, value: String)]] = [
            "metrics": [("listen", metricsSocket)],
            "socket": [("operator_group", groups.operator), ("admin_group", groups.admin)],
        ]
        var lines: [String] = []
        var table = ""
        var written: Set<String> = []
        for line in base.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("[") {
                table = String(trimmed.dropFirst().prefix { $0 != "]" }).trimmingCharacters(in: .whitespaces)
                lines.append(line)
                if let keys = settings[table] {
                    lines += keys.map { "\($0.key) = \"\($0.value)\"" }
                    written.insert(table)
                }
                continue
            }
            let key = trimmed.prefix { $0 != "=" && $0 != " " }
            if let keys = settings[table], keys.contains(where: { $0.key == key }) { continue }
            lines.append(line)
        }
        for (name, keys) in settings.sorted(by: { $0.key < $1.key }) where !written.contains(name) {
            lines.append("[\(name)]")
            lines += keys.map { "\($0.key) = \"\($0.value)\"" }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The socket roles' groups, found in /etc/group as on a kiosk, where the package's
    /// sysusers.d file puts `accessd-operator` and `accessd-admin`. A machine without the
    /// package lacks them, and glibc then asks NSS's systemd module too, whose loading keeps
    /// 0.3 MB resident that a kiosk does not have: Debian's base groups `users` and `staff`
    /// (base-passwd) stand in for them then, looked up the same way.
    static func roleGroups() -> (operator: String, admin: String, standIn: Bool) {
        let names = ((try? String(contentsOfFile: "/etc/group", encoding: .utf8)) ?? "")
            .split(separator: "\n").compactMap { $0.split(separator: ":").first.map(String.init) }
        if names.contains("accessd-operator") && names.contains("accessd-admin") {
            return ("accessd-operator", "accessd-admin", false)
        }
        return ("users", "staff", true)
    }

    private func mb(_ kb: Int) -> String { String(format: "%.1f MB", Double(kb) / 1024) }

    /// Sends `rounds` batches, one advertisement of each of the first `readers` readers per
    /// batch, a batch every `every`; returns the advertisements sent.
    @discardableResult
    private func advertiseRounds(_ daemon: any MeasuredAccessd, readers: Int, rounds: Int, every: Duration) async throws
        -> Int
    {
        var next = ContinuousClock.now
        for round in 0..<rounds {
            try await daemon.mock.run(python: MockReaders.advertise(readers, rssi: -60 - round % 5))
            next += every
            if next > ContinuousClock.now { try await Task.sleep(until: next) }
        }
        return readers * rounds
    }

    static func waitForReaders(_ count: Int, _ connection: ControlConnection) async throws {
        for _ in 0..<600 {
            if (try? connection.call("status.get").get()["readerCount"]?.int) == Int64(count) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ValidationError("accessd did not hear \(count) readers")
    }

    static func peakKB(_ pid: pid_t) -> Int { statusKB(pid, "VmHWM") }

    /// A line of /proc/PID/status in kB (VmRSS, VmHWM, RssAnon, RssFile).
    static func statusKB(_ pid: pid_t, _ field: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") })
        else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// The file-backed resident set per mapped file, largest first (from /proc/PID/smaps), so
    /// a figure says which binary or library it is; copied-on-write pages count as anonymous.
    static func residentByFile(_ pid: pid_t) -> [(file: String, kb: Int)] {
        // Read to the end: String(contentsOfFile:) stops early on this large procfs file.
        guard let handle = FileHandle(forReadingAtPath: "/proc/\(pid)/smaps") else { return [] }
        defer { try? handle.close() }
        let smaps = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        var byFile: [String: Int] = [:]
        var file: String?
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if line.hasPrefix("Rss:"), let file, fields.count > 1 {
                byFile[file, default: 0] += Int(fields[1]) ?? 0
            } else if line.hasPrefix("Anonymous:"), let file, fields.count > 1 {
                // Pages of the file written since (relocated pointers, data): anonymous now.
                byFile[file, default: 0] -= Int(fields[1]) ?? 0
            } else if let first = fields.first, first.contains("-"), first.allSatisfy(\.isHexDigitOrDash) {
                // A mapping's header: address range, permissions, offset, device, inode, path.
                file =
                    fields.count > 5 && fields[5].hasPrefix("/")
                    ? fields[5].split(separator: "/").last.map(String.init) : nil
            }
        }
        return byFile.map { (file: $0.key, kb: $0.value) }.sorted { $0.kb > $1.kb }
    }

    /// RSS, and how much of it is accessd's own memory (anonymous) and how much pages of the
    /// binary and libraries mapped from files (shared, and given back under memory pressure).
    private func resident(_ pid: pid_t) -> String {
        "RSS \(mb(Self.statusKB(pid, "VmRSS"))) (anonymous \(mb(Self.statusKB(pid, "RssAnon"))), "
            + "file-backed \(mb(Self.statusKB(pid, "RssFile"))))"
    }
}

extension Character {
    fileprivate var isHexDigitOrDash: Bool { isHexDigit || self == "-" }
}
