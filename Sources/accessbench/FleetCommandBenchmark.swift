import AccessJSON
import ArgumentParser
import BlueZTestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A command to every kiosk of a fleet and its answer back (docs/fleet.md, "Commands"): N real
/// accessd instances (as `accessbench fleet`: private buses, dbusmock) take `scanning.set` from
/// one Debian `mosquitto` over TLS with a password per role, as commands require; an operator
/// publishes through one long-lived `mosquitto_pub -l` per kiosk (the sending time in the
/// request's `id`) and one `mosquitto_sub` receives every answer on `+/commands/result`.
/// Per answer: publish → answer received; per round: the first publish → the last answer.
struct FleetCommandBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet-commands",
        abstract: "N accessd instances taking a command from one mosquitto over TLS: round trips."
    )

    @Option(help: "Instance counts, comma-separated.") var instances: String = "1,10,50"
    @Option(help: "Rounds: a command to every instance, then every answer.") var rounds: Int = 20
    @Flag(help: "Print one JSON object instead of a summary.") var json = false

    func run() async throws {
        let counts = instances.split(separator: ",").compactMap { Int($0) }
        guard !counts.isEmpty, counts.allSatisfy({ (1...200).contains($0) }), rounds >= 1 else {
            throw ValidationError("--instances 1…200 each, --rounds ≥ 1")
        }
        let directory = NSTemporaryDirectory() + "accessbench-fleet-commands-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let broker = try TLSFleetBroker(directory: directory)
        defer { broker.stop() }
        var results: [String] = []
        var lines: [String] = []
        for count in counts {
            let result = try await measure(count: count, broker: broker, directory: directory + "/n\(count)")
            results.append(result.json)
            lines.append(result.line)
        }
        if json {
            print("{\"suite\":\"fleet-commands\",\"rounds\":\(rounds),\"results\":[\(results.joined(separator: ","))]}")
        } else {
            print(
                "fleet-commands: N accessd on private buses (dbusmock) ← one mosquitto (TLS, passwords) ← one "
                    + "mosquitto_pub -l per kiosk; scanning.set, \(rounds) rounds; round trip = publish → answer received"
            )
            for line in lines { print(line) }
        }
    }

    private func measure(count: Int, broker: TLSFleetBroker, directory: String) async throws
        -> FleetBenchmark.Result
    {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var daemons: [BenchDaemon] = []
        defer { for daemon in daemons { daemon.stop() } }
        for index in 0..<count {
            daemons.append(try await BenchDaemon(config: broker.kioskConfig(index), waitForSocket: false))
        }
        for daemon in daemons { try await daemon.waitConnected() }
        let output = directory + "/answers.out"
        let subscriber = try ChildProcess(
            broker.client("/usr/bin/mosquitto_sub") + ["-q", "1", "-t", "bench/+/commands/result", "-F", "%U %p"],
            output: output)
        defer { subscriber.stop(grace: 1) }
        // One publisher per kiosk, fed a line per command through a FIFO.
        var publishers: [ChildProcess] = []
        var feeds: [FileHandle] = []
        defer {
            for feed in feeds { try? feed.close() }
            for publisher in publishers { publisher.stop(grace: 1) }
        }
        for index in 0..<count {
            let fifo = directory + "/feed-\(index)"
            guard mkfifo(fifo, 0o600) == 0 else { throw ValidationError("mkfifo \(fifo): errno \(errno)") }
            // Opened here first, read-write (which never waits for the other end): posix_spawn
            // suspends this process until the child has run its file actions, and the child's
            // read-only open of a FIFO waits for a writer.
            let descriptor = open(fifo, O_RDWR)
            guard descriptor >= 0 else { throw ValidationError("open \(fifo): errno \(errno)") }
            feeds.append(FileHandle(fileDescriptor: descriptor, closeOnDealloc: true))
            publishers.append(
                try ChildProcess(
                    broker.client("/usr/bin/mosquitto_pub") + ["-q", "1", "-t", "bench/kiosk-\(index)/commands", "-l"],
                    input: fifo, output: directory + "/pub-\(index).out"))
        }
        try await Task.sleep(for: .seconds(1))

        var latencies: [Double] = []
        var roundTimes: [Double] = []
        var missing = 0
        for round in 0..<rounds {
            var sent: [String: Double] = [:]
            for (index, feed) in feeds.enumerated() {
                let now = Date().timeIntervalSince1970
                let id = "r\(round)-k\(index)"
                sent[id] = now
                let request =
                    "{\"jsonrpc\":\"2.0\",\"id\":\"\(id)\",\"method\":\"scanning.set\",\"params\":{\"enabled\":true}}\n"
                try feed.write(contentsOf: Data(request.utf8))
            }
            let first = sent.values.min() ?? 0
            var answered: [String: Double] = [:]
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline && answered.count < sent.count {
                for (receivedAt, id) in Self.answers(output) where sent[id] != nil { answered[id] = receivedAt }
                if answered.count < sent.count { try await Task.sleep(for: .milliseconds(5)) }
            }
            missing += sent.count - answered.count
            for (id, receivedAt) in answered { latencies.append((receivedAt - (sent[id] ?? receivedAt)) * 1000) }
            if let last = answered.values.max() { roundTimes.append((last - first) * 1000) }
            try await Task.sleep(for: .milliseconds(200))
        }
        latencies.sort()
        roundTimes.sort()
        let p50 = FleetBenchmark.percentile(latencies, 0.5)
        let p99 = FleetBenchmark.percentile(latencies, 0.99)
        let roundP50 = FleetBenchmark.percentile(roundTimes, 0.5)
        let roundMax = roundTimes.last ?? .nan
        let json =
            "{\"instances\":\(count),\"commands\":\(count * rounds),\"answered\":\(latencies.count),"
            + "\"roundTripP50Ms\":\(FleetBenchmark.round1(p50)),\"roundTripP99Ms\":\(FleetBenchmark.round1(p99)),"
            + "\"fleetRoundP50Ms\":\(FleetBenchmark.round1(roundP50)),\"fleetRoundMaxMs\":\(FleetBenchmark.round1(roundMax))}"
        let line =
            "  \(count) instance(s): \(latencies.count)/\(count * rounds) answered (\(missing) missing), round trip p50 "
            + "\(FleetBenchmark.round1(p50)) ms, p99 \(FleetBenchmark.round1(p99)) ms; the whole fleet answered in "
            + "p50 \(FleetBenchmark.round1(roundP50)) ms, at most \(FleetBenchmark.round1(roundMax)) ms"
        return FleetBenchmark.Result(json: json, line: line)
    }

    /// `receivedAt payload` lines: when each answer arrived, by its request's id.
    static func answers(_ path: String) -> [(Double, String)] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, let receivedAt = Double(parts[0]),
                let id = (try? JSONValue.parse(String(parts[1])))?["id"]?.string
            else { return nil }
            return (receivedAt, id)
        }
    }
}

/// Debian's mosquitto on a free loopback port, TLS only (a CA and a server certificate made
/// with openssl for the run) and a password for each role: what `[mqtt] commands` requires.
final class TLSFleetBroker: @unchecked Sendable {
    let port: Int
    let directory: String
    private(set) var process: ChildProcess?
    static let kioskPassword = "kiosk-secret"
    static let operatorPassword = "operator-secret"

    init(directory: String) throws {
        self.directory = directory
        port = try LoopbackPort.free()
        let run: ([String]) throws -> Void = { arguments in
            let result = try runCommand(arguments, mergingErrors: true)
            guard result.status == 0 else { throw ValidationError("\(arguments[0]): \(result.output)") }
        }
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try run(
            ["/usr/bin/openssl", "req", "-x509"] + key
                + [
                    "-keyout", directory + "/ca.key", "-out", directory + "/ca.pem", "-days", "2", "-subj",
                    "/CN=bench CA",
                ])
        try run(
            ["/usr/bin/openssl", "req"] + key
                + ["-keyout", directory + "/server.key", "-out", directory + "/server.csr", "-subj", "/CN=127.0.0.1"])
        try "subjectAltName=IP:127.0.0.1\n".write(toFile: directory + "/san.ext", atomically: true, encoding: .utf8)
        try run([
            "/usr/bin/openssl", "x509", "-req", "-in", directory + "/server.csr", "-CA", directory + "/ca.pem",
            "-CAkey", directory + "/ca.key", "-CAcreateserial", "-out", directory + "/server.pem", "-days", "2",
            "-extfile", directory + "/san.ext",
        ])
        let passwords = directory + "/passwords"
        _ = FileManager.default.createFile(atPath: passwords, contents: Data())
        try run(["/usr/bin/mosquitto_passwd", "-b", passwords, "kiosk", Self.kioskPassword])
        try run(["/usr/bin/mosquitto_passwd", "-b", passwords, "operator", Self.operatorPassword])
        // accessd refuses a password file others can read.
        _ = FileManager.default.createFile(
            atPath: directory + "/kiosk-password", contents: Data(Self.kioskPassword.utf8),
            attributes: [.posixPermissions: 0o600])
        let config = directory + "/mosquitto.conf"
        try """
        listener \(port) 127.0.0.1
        user root
        max_queued_messages 100000
        cafile \(directory)/ca.pem
        certfile \(directory)/server.pem
        keyfile \(directory)/server.key
        allow_anonymous false
        password_file \(passwords)

        """.write(toFile: config, atomically: true, encoding: .utf8)
        process = try ChildProcess(["/usr/sbin/mosquitto", "-c", config], output: directory + "/mosquitto.log")
        Thread.sleep(forTimeInterval: 0.5)
    }

    /// A mosquitto client's command line as the operator, over TLS.
    func client(_ program: String) -> [String] {
        [
            program, "-h", "127.0.0.1", "-p", "\(port)", "--cafile", directory + "/ca.pem", "-u", "operator", "-P",
            Self.operatorPassword,
        ]
    }

    func kioskConfig(_ index: Int) -> String {
        """
        [log]
        level = "warning"
        [mqtt]
        url = "mqtts://127.0.0.1:\(port)"
        topic_prefix = "bench"
        client_id = "kiosk-\(index)"
        username = "kiosk"
        password_file = "\(directory)/kiosk-password"
        ca_file = "\(directory)/ca.pem"
        commands = ["scanning.set"]

        """
    }

    func stop() {
        _ = process?.stop(grace: 2)
        process = nil
    }
}
