import AccessCore
import ArgumentParser
import BlueZ
import BlueZTestSupport
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// PropertiesChanged signals (RSSI + service data), as bluetoothd sends them for every
/// advertisement with DuplicateData on, pushed through a private dbus-daemon into the
/// BlueZ client: signals handled per second, and the latency from emission to the event.
struct BlueZBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bluez",
        abstract: "Signals handled per second and emission-to-event latency through a private bus."
    )

    @Option(help: "Signals per run.") var signals: Int = 50_000
    @Option(help: "Rate of the paced run, signals per second.") var pacedRate: Int = 1_000
    @Flag(help: "Print one JSON object instead of a summary.") var json = false

    func run() async throws {
        guard signals >= 1_000, pacedRate > 0 else { throw ValidationError("--signals ≥ 1000, --paced-rate > 0") }
        let bench = try await BusBench()
        defer { bench.close() }
        let saturated = try await bench.run(count: signals, pace: nil)
        let paced = try await bench.run(count: min(signals, pacedRate * 10), pace: pacedRate)
        if json {
            print(
                "{\"suite\":\"bluez\",\"results\":[\(saturated.json("saturated")),\(paced.json("paced\(pacedRate)"))]}")
        } else {
            print("bluez: PropertiesChanged (RSSI + ServiceData) → private dbus-daemon → BlueZClient event")
            print("  saturated: \(saturated.line)")
            print("  paced at \(pacedRate)/s: \(paced.line)")
        }
    }
}

struct BusResult {
    var count: Int
    var received: Int
    var seconds: Double
    var latencies: [Double]  // ms, sorted

    var rate: Double { Double(received) / seconds }
    func percentile(_ p: Double) -> Double {
        guard !latencies.isEmpty else { return .nan }
        return latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
    }

    var line: String {
        "\(received)/\(count) signals handled, \(Int(rate.rounded()))/s, latency p50 \(format(percentile(0.5))) ms, "
            + "p99 \(format(percentile(0.99))) ms, max \(format(latencies.last ?? .nan)) ms"
    }

    func json(_ mode: String) -> String {
        "{\"mode\":\"\(mode)\",\"signals\":\(count),\"handled\":\(received),\"signalsPerSecond\":\(Int(rate.rounded())),"
            + "\"latencyP50Ms\":\(format(percentile(0.5))),\"latencyP99Ms\":\(format(percentile(0.99)))}"
    }

    private func format(_ value: Double) -> String {
        value.isNaN ? "null" : String(Double(Int((value * 1000).rounded())) / 1000)
    }
}

/// One private bus, one emitter that owns `org.bluez`, one client.
final class BusBench: Sendable {
    static let device = "/org/bluez/hci0/dev_00_BB_01_00_00_00"
    static let uuid = "0000fff8-0000-1000-8000-00805f9b34fb"

    let bus: PrivateBus
    let emitter: DBusConnection
    let client: BlueZClient

    init() async throws {
        bus = try PrivateBus()
        emitter = try DBusConnection(address: bus.address)
        let reply = try await emitter.call(
            destination: DBusDaemon.service, path: DBusDaemon.path,
            interface: DBusDaemon.interface, method: "RequestName",
            arguments: [.string("org.bluez"), .uint32(0)])
        guard reply.first?.integer == 1 else { throw ValidationError("could not own org.bluez on the private bus") }
        let emitter = self.emitter
        // The tree the client reads at start: one adapter, one device.
        try emitter.export(path: "/") { call in
            let tree = DBusValue.dictionary(
                keySignature: "o", valueSignature: "a{sa{sv}}",
                [
                    .init(
                        .objectPath("/org/bluez/hci0"),
                        .dictionary(
                            keySignature: "s", valueSignature: "a{sv}",
                            [
                                .init(
                                    .string(Adapter1.interface),
                                    .properties(["Powered": .bool(true), "Address": .string("00:BB:01:01:00:01")]))
                            ])),
                    .init(
                        .objectPath(BusBench.device),
                        .dictionary(
                            keySignature: "s", valueSignature: "a{sv}",
                            [
                                .init(
                                    .string(Device1.interface),
                                    .properties([
                                        "Address": .string("00:BB:01:00:00:00"),
                                        "Adapter": .objectPath("/org/bluez/hci0"),
                                    ]))
                            ])),
                ])
            try? emitter.reply(to: call, with: [tree])
        }
        client = BlueZClient(connection: try DBusConnection(address: bus.address))
        try await client.start()
    }

    func close() {
        client.connection.close()
        emitter.close()
    }

    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    func run(count: Int, pace: Int?) async throws -> BusResult {
        let received = Mutex<(count: Int, latencies: [Double])>((0, []))
        let events = client.events
        let consumer = Task {
            for await event in events {
                guard case .deviceAdvertised(let device) = event, let data = device.serviceData[Self.uuid],
                    data.count >= 9, data[0] == 0xBE
                else { continue }
                var sent: UInt64 = 0
                for byte in data[1..<9] { sent = sent << 8 | UInt64(byte) }
                let latency = Double(Self.monotonicNanoseconds() &- sent) / 1e6
                let done = received.withLock { state -> Bool in
                    state.count += 1
                    state.latencies.append(latency)
                    return state.count >= count
                }
                if done { return }
            }
        }
        let start = ContinuousClock.now
        let interval: Duration? = pace.map { .nanoseconds(1_000_000_000 / $0) }
        for index in 0..<count {
            if let interval {
                let due = start + interval * index
                if due > ContinuousClock.now { try await Task.sleep(until: due) }
            } else if index % 512 == 0 {
                // Flow control: the bus daemon and the client's buffers are finite, and a
                // benchmark that overruns them measures drops, not throughput.
                while index - received.withLock(\.count) > 2_000 { try await Task.sleep(for: .microseconds(200)) }
            }
            var payload: [UInt8] = [0xBE]
            let now = Self.monotonicNanoseconds()
            for shift in stride(from: 56, through: 0, by: -8) { payload.append(UInt8((now >> UInt64(shift)) & 0xFF)) }
            payload += [UInt8(index & 0xFF), 0, 0, 0, 0, 0]
            try emitter.emitSignal(
                path: Self.device, interface: DBusProperties.interface, name: "PropertiesChanged",
                arguments: [
                    .string(Device1.interface),
                    .properties([
                        "RSSI": .int16(Int16(-40 - index % 50)),
                        "ServiceData": .dictionary(
                            keySignature: "s", valueSignature: "v",
                            [.init(.string(Self.uuid), .variant(.bytes(payload)))]),
                    ]),
                    .strings([]),
                ])
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while received.withLock(\.count) < count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(1))
        }
        let elapsed = ContinuousClock.now - start
        consumer.cancel()
        let (handled, latencies) = received.withLock { ($0.count, $0.latencies) }
        return BusResult(count: count, received: handled, seconds: elapsed.secondsValue, latencies: latencies.sorted())
    }
}
