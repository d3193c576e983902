import AccessJSON
import ArgumentParser
import BlueZTestSupport
import ControlSocket
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// N real accessd instances (release build beside this binary), each on its own private bus
/// with dbusmock's bluez5 template, all publishing to one Debian `mosquitto` through the MQTT
/// bridge (docs/fleet.md), and one `mosquitto_sub` receiving every event: end-to-end latency
/// from journal append (the event's `time`) to the subscriber's receipt (`%U`), events per
/// second through the broker, and each instance's and the broker's resident memory.
struct FleetBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet",
        abstract: "N accessd instances publishing events to one mosquitto: latency, throughput, RSS."
    )

    @Option(help: "Instance counts, comma-separated.") var instances: String = "1,10,50"
    @Option(help: "Events each instance journals per measurement.") var events: Int = 200
    @Option(help: "Events per second each instance journals.") var rate: Double = 20
    @Flag(help: "Print one JSON object instead of a summary.") var json = false

    func run() async throws {
        let counts = instances.split(separator: ",").compactMap { Int($0) }
        guard !counts.isEmpty, counts.allSatisfy({ (1...200).contains($0) }), events >= 10, rate > 0 else {
            throw ValidationError("--instances 1…200 each, --events ≥ 10, --rate > 0")
        }
        let directory = NSTemporaryDirectory() + "accessbench-fleet-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let broker = try FleetBroker(directory: directory)
        defer { broker.stop() }
        var results: [String] = []
        var lines: [String] = []
        for count in counts {
            let result = try await measure(count: count, broker: broker, directory: directory + "/n\(count)")
            results.append(result.json)
            lines.append(result.line)
        }
        if json {
            print(
                "{\"suite\":\"fleet\",\"eventsPerInstance\":\(events),\"ratePerInstance\":\(rate),\"results\":[\(results.joined(separator: ","))]}"
            )
        } else {
            print(
                "fleet: N accessd on private buses (dbusmock) → one mosquitto → mosquitto_sub; "
                    + "\(events) events per instance at \(rate)/s each; latency = journal append → subscriber")
            for line in lines { print(line) }
        }
    }

    struct Result {
        var json: String
        var line: String
    }

    private func measure(count: Int, broker: FleetBroker, directory: String) async throws -> Result {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var daemons: [BenchDaemon] = []
        defer { for daemon in daemons { daemon.stop() } }
        for index in 0..<count {
            daemons.append(try await BenchDaemon(fleetIndex: index, brokerPort: broker.port))
        }
        for daemon in daemons { try await daemon.waitConnected() }
        let output = directory + "/sub.out"
        let subscriber = try ChildProcess(
            [
                "/usr/bin/mosquitto_sub", "-h", "127.0.0.1", "-p", "\(broker.port)", "-q", "1",
                "-t", "bench/+/events/readers.scopeChanged", "-F", "%U %t %p",
            ], output: output)
        defer { subscriber.stop(grace: 1) }
        try await Task.sleep(for: .milliseconds(500))

        // Every instance journals its events at `rate`, all at once.
        let cpuBefore = (
            accessd: daemons.map { Self.cpuSeconds($0.process.pid) }.reduce(0, +),
            broker: broker.process.map { Self.cpuSeconds($0.pid) } ?? 0
        )
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for daemon in daemons {
                group.addTask { try await daemon.journal(events: events, rate: rate) }
            }
            try await group.waitForAll()
        }
        let expected = count * events
        var received: [(receivedAt: Double, time: Double, topic: Substring)] = []
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            received = Self.read(output)
            if received.count >= expected { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        let sending = (ContinuousClock.now - started)
        // CPU each side spent per event delivered: where the fleet's limit is.
        let accessdCPU = daemons.map { Self.cpuSeconds($0.process.pid) }.reduce(0, +) - cpuBefore.accessd
        let brokerCPU = (broker.process.map { Self.cpuSeconds($0.pid) } ?? 0) - cpuBefore.broker
        let perEvent = (
            accessd: accessdCPU / Double(max(1, received.count)) * 1_000_000,
            broker: brokerCPU / Double(max(1, received.count)) * 1_000_000
        )
        let latencies = received.map { ($0.receivedAt - $0.time) * 1000 }.sorted()
        let first = received.map(\.receivedAt).min() ?? 0
        let last = received.map(\.receivedAt).max() ?? 0
        let throughput = last > first ? Double(received.count) / (last - first) : 0
        let rss = daemons.compactMap { Self.residentKB($0.process.pid) }
        let meanRSS = rss.isEmpty ? 0 : rss.reduce(0, +) / rss.count
        let brokerRSS = broker.process.map { Self.residentKB($0.pid) ?? 0 } ?? 0
        let p50 = Self.percentile(latencies, 0.5)
        let p99 = Self.percentile(latencies, 0.99)
        let json =
            "{\"instances\":\(count),\"expected\":\(expected),\"received\":\(received.count),"
            + "\"latencyP50Ms\":\(Self.round1(p50)),\"latencyP99Ms\":\(Self.round1(p99)),"
            + "\"eventsPerSecond\":\(Int(throughput.rounded())),\"accessdRssKbMean\":\(meanRSS),"
            + "\"accessdRssKbMax\":\(rss.max() ?? 0),\"brokerRssKb\":\(brokerRSS),"
            + "\"accessdCpuUsPerEvent\":\(Int(perEvent.accessd.rounded())),\"brokerCpuUsPerEvent\":\(Int(perEvent.broker.rounded()))}"
        let line =
            "  \(count) instance(s): \(received.count)/\(expected) events, latency p50 \(Self.round1(p50)) ms, "
            + "p99 \(Self.round1(p99)) ms, \(Int(throughput.rounded())) events/s through the broker, accessd RSS "
            + "mean \(meanRSS / 1024) MB max \((rss.max() ?? 0) / 1024) MB, broker RSS \(brokerRSS / 1024) MB; "
            + "CPU per event: accessd \(Int(perEvent.accessd.rounded())) µs, broker \(Int(perEvent.broker.rounded())) µs "
            + "(\(Int(Double(sending.components.seconds))) s)"
        return Result(json: json, line: line)
    }

    /// `receivedAt topic payload` lines: the subscriber's receipt and the event's journal time.
    static func read(_ path: String) -> [(receivedAt: Double, time: Double, topic: Substring)] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ", maxSplits: 2)
            guard parts.count == 3, let receivedAt = Double(parts[0]),
                let time = (try? JSONValue.parse(String(parts[2])))?["time"]?.number
            else { return nil }
            return (receivedAt, time, parts[1])
        }
    }

    /// User and system CPU seconds a process has used (/proc/PID/stat fields 14 and 15).
    static func cpuSeconds(_ pid: pid_t) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, so utime (14) and stime (15) are at 11 and 12.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    static func residentKB(_ pid: pid_t) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return nil }
        return Int(line.split(separator: " ").dropFirst().first ?? "")
    }

    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
    }

    static func round1(_ value: Double) -> String {
        value.isNaN ? "null" : String(Double(Int((value * 10).rounded())) / 10)
    }
}

/// Debian's mosquitto on a free loopback port for the benchmark.
final class FleetBroker: @unchecked Sendable {
    let port: Int
    private(set) var process: ChildProcess?

    init(directory: String) throws {
        port = try LoopbackPort.free()
        let config = directory + "/mosquitto.conf"
        try "listener \(port) 127.0.0.1\nallow_anonymous true\nuser root\nmax_queued_messages 100000\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        process = try ChildProcess(["/usr/sbin/mosquitto", "-c", config], output: directory + "/mosquitto.log")
        Thread.sleep(forTimeInterval: 0.5)
    }

    func stop() {
        _ = process?.stop(grace: 2)
        process = nil
    }
}

/// One accessd of the fleet: a `BenchDaemon` with its MQTT bridge on.
extension BenchDaemon {
    convenience init(fleetIndex index: Int, brokerPort: Int) async throws {
        try await self.init(
            config: """
                [log]
                level = "warning"
                [mqtt]
                url = "mqtt://127.0.0.1:\(brokerPort)"
                topic_prefix = "bench"
                client_id = "kiosk-\(index)"

                """, waitForSocket: false)
    }

    func waitConnected() async throws {
        for _ in 0..<1500 {
            if let connection = try? ControlConnection(path: socketPath),
                case .success(let status)? = try? connection.call("status.get"), status["mqtt"]?["state"] == "connected"
            {
                return
            }
            guard process.isRunning else {
                throw ValidationError("accessd did not start (build it: swift build -c release)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw ValidationError("accessd did not connect to the broker")
    }

    /// `events` reader-scope changes (each one journal event), paced at `rate` per second.
    func journal(events: Int, rate: Double) async throws {
        let connection = try ControlConnection(path: socketPath)
        let interval = Duration.nanoseconds(Int64(1_000_000_000 / rate))
        var next = ContinuousClock.now
        for index in 0..<events {
            _ = try connection.call("readers.setScope", ["reader": "2A01", "pathLossOffset": .int(Int64(index % 10))])
                .get()
            next += interval
            try await Task.sleep(until: next)
        }
    }
}
