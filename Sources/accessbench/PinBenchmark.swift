import AccessCore
import AccessJSON
import AccessStore
import ArgumentParser
import BlueZTestSupport
import ControlSocket
import Crypto
import Foundation

/// `accessbench pin`: whether PIN checks at the standard scrypt cost (32 MiB, ~0.1 s each)
/// hold up everything else accessd does (issue #31). The real accessd on dbusmock holds a
/// credential sealed under a PIN; five clients keep changing its PIN, one change after another
/// (each change derives the key twice: the old PIN checked, the new one sealed), while a
/// probe calls `status.get` every 20 ms and a new reader advertises every 100 ms, timed to
/// its `reader.updated`. Printed: both latencies, idle and under the PIN load.
struct PinBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin",
        abstract: "status.get and advertisement latency while five PIN checks run at once (standard scrypt cost)."
    )

    @Option(help: "The accessd to measure (default: the one built beside this binary).") var accessd: String?
    @Option(help: "Seconds measured idle, then under load.") var seconds: Int = 10
    @Option(help: "PIN changes at once.") var parallel: Int = 5

    static let pin = "482916"

    func run() async throws {
        guard (2...120).contains(seconds), (1...20).contains(parallel) else {
            throw ValidationError("--seconds 2…120, --parallel 1…20")
        }
        let state = NSTemporaryDirectory() + "accessbench-pin-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: state) }
        let credential = try Self.storeCredential(in: state)
        let daemon = try await BenchDaemon(
            config: "[site]\npin_attempts = 20\n[log]\nlevel = \"warning\"\n",
            executable: accessd, stateDirectory: state)
        defer { daemon.stop() }
        print(
            "pin: accessd on dbusmock; \(parallel) clients calling credentials.setPin (2 scrypt derivations each, "
                + "N = 2^15); status.get every 20 ms; a new reader's first advertisement every 100 ms → reader.updated")

        let idle = try await measure(daemon, duration: .seconds(seconds), firstReader: 0)
        report("idle", idle)
        let load = PinLoad(socketPath: daemon.socketPath, credential: credential, parallel: parallel)
        load.start()
        let loaded = try await measure(daemon, duration: .seconds(seconds), firstReader: 10_000)
        let (changes, failures) = load.stop()
        report(
            "\(parallel) PIN changes always under way (\(changes) changes in \(seconds) s, "
                + "\(changes * 2) derivations)", loaded)
        if !failures.isEmpty { print("    PIN changes that failed: \(failures)") }
    }

    struct Latencies {
        var status: [Double] = []
        var advertisement: [Double] = []
        var advertisementsMissed = 0
    }

    private func report(_ label: String, _ latencies: Latencies) {
        func line(_ values: [Double]) -> String {
            "p50 \(Figures.round3(Figures.percentile(values, 0.5))) ms, p99 \(Figures.round3(Figures.percentile(values, 0.99))) ms, "
                + "max \(Figures.round3(values.max() ?? 0)) ms (\(values.count))"
        }
        print("  \(label):")
        print("    status.get:                    \(line(latencies.status))")
        print(
            "    advertisement → reader.updated: \(line(latencies.advertisement))"
                + (latencies.advertisementsMissed > 0 ? ", \(latencies.advertisementsMissed) not seen within 5 s" : ""))
    }

    /// `duration` of probing: `status.get` on one connection, new readers from `firstReader` on.
    private func measure(_ daemon: BenchDaemon, duration: Duration, firstReader: Int) async throws -> Latencies {
        let socketPath = daemon.socketPath
        let until = ContinuousClock.now + duration
        let status = taskOnThreadOfItsOwn { () -> [Double] in
            let connection = try ControlConnection(path: socketPath)
            var latencies: [Double] = []
            while ContinuousClock.now < until {
                let start = ContinuousClock.now
                _ = try connection.call("status.get")
                latencies.append(Figures.milliseconds(ContinuousClock.now - start))
                try await Task.sleep(for: .milliseconds(20))
            }
            return latencies
        }
        var result = Latencies()
        let events = try ControlConnection(path: socketPath)
        _ = try events.call("events.subscribe", ["kinds": [.string(EventKind.readerUpdated.rawValue)]]).get()
        var reader = firstReader
        while ContinuousClock.now < until {
            let sent = ContinuousClock.now
            try await daemon.mock.run(python: MockReaders.appearAndAdvertise(reader, rssi: -70))
            let id = MockReaders.readerID(reader)
            var seen = false
            while !seen, ContinuousClock.now < sent + .seconds(5), events.waitReadable(timeout: .milliseconds(100)) {
                if case .readerUpdated(let info)? = ControlEvent(eventNotification: try events.nextNotification()),
                    info.id == id
                {
                    result.advertisement.append(Figures.milliseconds(ContinuousClock.now - sent))
                    seen = true
                }
            }
            if !seen { result.advertisementsMissed += 1 }
            reader += 1
            let next = sent + .milliseconds(100)
            if next > ContinuousClock.now { try await Task.sleep(until: next) }
        }
        result.status = try await status.value
        return result
    }

    /// A credential with a second factor sealed under `pin` at the standard cost, in a new
    /// state directory, as a registration leaves it.
    static func storeCredential(in directory: String) throws -> CredentialID {
        let store = try AccessStore(
            directory: directory, dataKey: .success(.random(protection: .keyFile, origin: "benchmark")))
        let id = CredentialID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")!
        var generator = SystemRandomNumberGenerator()
        let sealed = try SealedSecondFactorKey.seal(
            P256.Signing.PrivateKey(), pin: pin, credential: id, using: &generator)
        let credential = Credential(
            id: id, siteTag: SiteTag(0x5117_E001), cardholderName: "Bench", kind: .mobile,
            state: .active, sitePublicKey: P256.Signing.PrivateKey().publicKey,
            signingKey: P256.Signing.PrivateKey(), sealedSecondFactor: sealed,
            secondFactorEnabled: true)
        // A site nobody answers on: its syncs fail at once and back off.
        try store.insertCredential(
            StoredCredential(
                credential: credential, siteName: "Bench", siteURL: "http://127.0.0.1:9",
                deviceName: "bench", registeredAt: Date().timeIntervalSince1970))
        return id
    }
}

/// `parallel` clients, a thread and a connection each, changing the PIN to itself one change
/// after another, until stopped: `parallel` PIN checks always under way.
final class PinLoad: @unchecked Sendable {
    let socketPath: String
    let credential: CredentialID
    let parallel: Int
    private let lock = NSLock()
    private var isStopped = false
    private var changes = 0
    private var failures: [String] = []
    private let finished = DispatchGroup()

    init(socketPath: String, credential: CredentialID, parallel: Int) {
        self.socketPath = socketPath
        self.credential = credential
        self.parallel = parallel
    }

    func start() {
        for _ in 0..<parallel {
            finished.enter()
            Thread { [self] in
                defer { finished.leave() }
                client()
            }.start()
        }
    }

    /// Stops the clients after their change under way; the changes made, and the first failures.
    func stop() -> (changes: Int, failures: [String]) {
        lock.withLock { isStopped = true }
        finished.wait()
        return lock.withLock { (changes, failures) }
    }

    private func client() {
        guard let connection = try? ControlConnection(path: socketPath),
            let params = try? JSONValue(
                encoding: SetPinParams(
                    id: credential.description, oldPin: PinBenchmark.pin,
                    newPin: PinBenchmark.pin))
        else { return }
        while !lock.withLock({ isStopped }) {
            let result = try? connection.call("credentials.setPin", params)
            lock.withLock {
                if case .success? = result {
                    changes += 1
                } else if failures.count < 3 {
                    failures.append("\(String(describing: result))")
                }
            }
        }
    }
}
