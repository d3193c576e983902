import AccessJSON
import ArgumentParser
import BlueZTestSupport
import ControlSocket
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

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
        // A reader of version 1 or 2 signs with the site key, which only a site allowing
        // those versions gives its readers (reader protocol §1.1).
        site = try ChildProcess(
            [readersim, "site", "serve", "--db", siteDatabase, "--listen", "127.0.0.1:0"]
                + (readerVersion < 3 ? ["--legacy-readers"] : []),
            output: directory + "/site.out")
        siteURL = try await waitForLine(directory + "/site.out") { $0["url"] as? String }
        // The reader controller's key, enrolled at the site (docs/site-api.md §7).
        let keyFile = directory + "/reader.key"
        let made = try run([readersim, "reader-key", keyFile])
        guard
            let key = (try JSONSerialization.jsonObject(with: Data(made.utf8)) as? [String: Any])?["publicKey"]
                as? String
        else { throw ValidationError("readersim reader-key printed no key") }
        _ = try run([
            readersim, "site", "reader", "add", "--db", siteDatabase, "--name", "bench", "--public-key", key,
            "--readers", "2A01",
        ])
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
