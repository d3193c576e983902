import ArgumentParser
import BlueZ
import BlueZTestSupport
import ControlSocket
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The real accessd (built beside this binary) against a private bus with dbusmock's bluez5
/// template: `status.get` answered per second, and the time from a settings change to its
/// `sdk.state` event reaching every one of 1, 100 and 1,000 subscribers.
struct SocketBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "socket",
        abstract: "status.get per second and event fan-out latency through accessd's socket."
    )

    @Option(help: "Subscriber counts, comma-separated.") var subscribers: String = "1,100,1000"
    @Option(help: "status.get requests per measurement.") var requests: Int = 20_000
    @Option(help: "Events per fan-out measurement.") var rounds: Int = 20
    @Flag(help: "Print one JSON object instead of a summary.") var json = false

    func run() async throws {
        let counts = subscribers.split(separator: ",").compactMap { Int($0) }
        guard !counts.isEmpty, counts.allSatisfy({ $0 > 0 && $0 <= 5000 }), requests >= 1000, rounds >= 2 else {
            throw ValidationError("--subscribers 1…5000 each, --requests ≥ 1000, --rounds ≥ 2")
        }
        raiseFileLimit()
        let daemon = try await BenchDaemon()
        defer { daemon.stop() }
        var results: [String] = []
        var lines: [String] = []
        for count in counts {
            let rate = try statusRate(daemon)
            let latencies = try fanout(daemon, subscribers: count)
            let p50 = percentile(latencies, 0.5)
            let p99 = percentile(latencies, 0.99)
            results.append(
                "{\"subscribers\":\(count),\"statusRequestsPerSecond\":\(Int(rate.rounded())),"
                    + "\"fanoutP50Ms\":\(round3(p50)),\"fanoutP99Ms\":\(round3(p99))}")
            lines.append(
                "  \(count) subscribers: \(Int(rate.rounded())) status.get/s, fan-out p50 \(round3(p50)) ms, "
                    + "p99 \(round3(p99)) ms (\(latencies.count) deliveries)")
        }
        if json {
            print("{\"suite\":\"socket\",\"results\":[\(results.joined(separator: ","))]}")
        } else {
            print(
                "socket: accessd on a private bus; status.get pipelined on one connection; fan-out = settings change → sdk.state at every subscriber"
            )
            for line in lines { print(line) }
        }
    }

    /// Pipelined: 500 requests written, then their answers read, until `requests` are done.
    func statusRate(_ daemon: BenchDaemon) throws -> Double {
        let connection = try ControlConnection(path: daemon.socketPath)
        let request = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status.get\"}\n"
        let batch = String(repeating: request, count: 500)
        let start = ContinuousClock.now
        var done = 0
        while done < requests {
            try connection.sendRaw(batch)
            for _ in 0..<500 { _ = try connection.readLine() }
            done += 500
        }
        let elapsed = ContinuousClock.now - start
        return Double(done) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    func fanout(_ daemon: BenchDaemon, subscribers count: Int) throws -> [Double] {
        let clients = try (0..<count).map { _ in try ControlConnection(path: daemon.socketPath) }
        for client in clients {
            _ = try client.call("events.subscribe", ["kinds": [.string(EventKind.sdkState.rawValue)]])
        }
        let control = try ControlConnection(path: daemon.socketPath)
        var latencies: [Double] = []
        var scanning = true
        for _ in 0..<rounds {
            // Wait until scanning is really on before turning it off, so each toggle off
            // is one isScanning change, one event.
            if scanning {
                for _ in 0..<500 {
                    if case .success(let status) = try control.call("status.get"), status["isScanning"]?.bool == true {
                        break
                    }
                    usleep(2_000)
                }
            }
            scanning.toggle()
            let start = ContinuousClock.now
            _ = try control.call("scanning.set", ["enabled": .bool(scanning)])
            if scanning {
                drain(clients)
                continue
            }  // turning on: the event comes when BlueZ confirms
            var waiting = Set(0..<count)
            var descriptors = clients.map { pollfd(fd: $0.fileDescriptor, events: Int16(POLLIN), revents: 0) }
            let deadline = ContinuousClock.now + .seconds(10)
            while !waiting.isEmpty && ContinuousClock.now < deadline {
                for index in waiting where clients[index].hasBufferedLine {
                    _ = try clients[index].nextNotification()
                    latencies.append(milliseconds(ContinuousClock.now - start))
                    waiting.remove(index)
                }
                guard poll(&descriptors, nfds_t(descriptors.count), 100) > 0 else { continue }
                // Stamp every ready socket before parsing any: the figure is accessd's
                // delivery, not this benchmark's JSON decoding.
                let arrived = milliseconds(ContinuousClock.now - start)
                for index in waiting where descriptors[index].revents != 0 {
                    _ = try clients[index].nextNotification()
                    latencies.append(arrived)
                    waiting.remove(index)
                }
                for index in descriptors.indices { descriptors[index].revents = 0 }
            }
        }
        _ = try control.call("scanning.set", ["enabled": true])
        return latencies.sorted()
    }

    func drain(_ clients: [ControlConnection]) {
        for client in clients { while client.waitReadable(timeout: .zero) { _ = try? client.nextNotification() } }
    }

    func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    func percentile(_ sorted: [Double], _ p: Double) -> Double {
        sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    func round3(_ value: Double) -> String {
        value.isNaN ? "null" : String(Double(Int((value * 1000).rounded())) / 1000)
    }

    func raiseFileLimit() {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}

/// accessd (built beside accessbench) on a private bus with dbusmock.
final class BenchDaemon: @unchecked Sendable {
    let bus: PrivateBus
    let mock: BlueZMock
    let process: ChildProcess
    var socketPath: String { bus.directory.path + "/a.sock" }

    /// The accessd built beside this binary, on its own private bus, with `config` as its file.
    /// `executable` nil: the accessd beside this binary; else that one (e.g. the package's,
    /// which is linked differently: docs/performance.md, "Many readers"). `stateDirectory`
    /// nil: a new, empty one beside the bus; else that one, kept (a restart on its state).
    init(
        config text: String = "[socket]\nsubscriber_queue = 4096\nmax_clients = 2048\n[log]\nlevel = \"warning\"\n",
        waitForSocket: Bool = true, executable: String? = nil, stateDirectory: String? = nil
    ) async throws {
        bus = try PrivateBus()
        mock = try await BlueZMock(bus: bus)
        try await mock.addAdapter("hci0")
        let executable =
            executable
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("accessd").path
        let config = bus.directory.path + "/accessd.toml"
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        process = try ChildProcess(
            [
                executable, "--config", config, "--socket", bus.directory.path + "/a.sock",
                "--state-dir", stateDirectory ?? bus.directory.path + "/state", "--bus", bus.address,
            ],
            output: bus.directory.path + "/accessd.log")
        guard waitForSocket else { return }
        for _ in 0..<500 {
            if controlSocketAnswers(socketPath) { return }
            guard process.isRunning else {
                throw ValidationError("accessd did not start (build it: swift build -c release)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw ValidationError("accessd did not answer")
    }

    func stop() {
        process.stop()
    }
}

/// Whether an accessd answers `status.get` on the control socket at `path` (it is up).
func controlSocketAnswers(_ path: String) -> Bool {
    guard let connection = try? ControlConnection(path: path) else { return false }
    return (try? connection.call("status.get")) != nil
}
