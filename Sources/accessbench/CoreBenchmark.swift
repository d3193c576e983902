import AccessCore
import ArgumentParser

#if canImport(Glibc)
    import Glibc
#endif

/// parse → range → registry → auto-connect for a generated stream of advertisements.
struct CoreBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "core",
        abstract: "Advertisements per second and bytes allocated per advertisement through the access core."
    )

    @Option(help: "Reader counts to run, comma-separated.") var readers: String = "1,100,10000"
    @Option(help: "Advertisements per measured run.") var advertisements: Int = 4_000_000
    @Flag(help: "Print one JSON object instead of a table.") var json = false

    func run() throws {
        AllocationCounter.ensurePreloaded()
        let counts = readers.split(separator: ",").compactMap { Int($0) }
        guard !counts.isEmpty, counts.allSatisfy({ $0 > 0 && $0 <= 1_000_000 }) else {
            throw ValidationError("--readers takes positive counts, e.g. 1,100,10000")
        }
        guard advertisements >= 10_000 else { throw ValidationError("--advertisements must be at least 10000") }

        var results: [CoreResult] = []
        for count in counts {
            var stream = AdvertisementStream(readers: count)
            stream.run(advertisements / 4)  // warm-up: every reader known, caches hot
            let start = ContinuousClock.now
            var allocations: (count: Int, bytes: Int, retained: Int)?
            allocations = AllocationCounter.measure { stream.run(advertisements) }
            let elapsed = ContinuousClock.now - start
            // Memory does not grow with stream length: a second run twice as long must not
            // allocate more per advertisement, and the registry stays at `count` entries.
            let longer = AllocationCounter.measure { stream.run(advertisements * 2) }
            let seconds = elapsed.secondsValue
            results.append(
                CoreResult(
                    readers: count,
                    advertisementsPerSecond: Double(advertisements) / seconds,
                    bytesAllocatedPerAdvertisement: allocations.map { Double($0.bytes) / Double(advertisements) },
                    bytesAllocatedPerAdvertisementDoubleLength: longer.map {
                        Double($0.bytes) / Double(advertisements * 2)
                    },
                    retainedBytes: allocations?.retained, retainedBytesDoubleLength: longer?.retained,
                    registrySize: stream.registrySize,
                    exchangesStarted: stream.exchangesStarted))
        }
        if json {
            print(CoreResult.json(results))
        } else {
            print("core: parse → range → registry → auto-connect, \(advertisements) advertisements per run, one core")
            if !AllocationCounter.isActive {
                print("(allocation counts unavailable: libMallocInterposerSwift.so not found beside the binary)")
            }
            for result in results { print(result.line) }
        }
    }
}

struct CoreResult {
    var readers: Int
    var advertisementsPerSecond: Double
    var bytesAllocatedPerAdvertisement: Double?
    var bytesAllocatedPerAdvertisementDoubleLength: Double?
    var retainedBytes: Int?
    var retainedBytesDoubleLength: Int?
    var registrySize: Int
    var exchangesStarted: Int

    var line: String {
        let rate = Int(advertisementsPerSecond.rounded())
        let bytes = bytesAllocatedPerAdvertisement.map { format($0) } ?? "n/a"
        let doubled = bytesAllocatedPerAdvertisementDoubleLength.map { format($0) } ?? "n/a"
        return "  \(readers) readers: \(rate) advertisements/s, \(bytes) bytes allocated/advertisement "
            + "(\(doubled) over a stream twice as long), heap growth \(retainedBytes.map(String.init) ?? "n/a") B "
            + "(\(retainedBytesDoubleLength.map(String.init) ?? "n/a") B twice as long), registry \(registrySize) readers, "
            + "\(exchangesStarted) auto-connect exchanges"
    }

    private func format(_ value: Double) -> String {
        String(Double(Int((value * 1000).rounded())) / 1000)
    }

    static func json(_ results: [CoreResult]) -> String {
        let items = results.map { result in
            "{\"readers\":\(result.readers),\"advertisementsPerSecond\":\(Int(result.advertisementsPerSecond.rounded())),"
                + "\"bytesAllocatedPerAdvertisement\":\(result.bytesAllocatedPerAdvertisement.map { "\($0)" } ?? "null")}"
        }
        return "{\"suite\":\"core\",\"results\":[\(items.joined(separator: ","))]}"
    }
}

/// A repeating stream of advertisements from `readers` readers whose RSSI follows a person
/// walking up to each door and away again, so range transitions and auto-connect exchanges
/// happen throughout, not only the steady state.
struct AdvertisementStream {
    private let payloads: [[UInt8]]
    private let rssiPattern: [Int]
    private var registry = ReaderRegistry()
    private var controller: AccessController
    private var now = Timestamp.zero
    private var position = 0
    private(set) var exchangesStarted = 0
    private var pendingEnds: [ReaderID] = []

    init(readers: Int) {
        var generator = SystemRandomNumberGenerator()
        let site = SiteTag(0x5117_E001)
        payloads = (0..<readers).map { index in
            ReaderAdvertisement(
                kind: index % 10 == 9 ? .aperioStyle : .gallagherStyle,
                flags: [.autoConnectEnabled, .manualConnectEnabled],
                readerID: ReaderID(UInt32(index + 1)), txPower: -59,
                autoConnectPathLoss: 20, manualConnectPathLoss: 40, siteTag: site
            ).serviceData
        }
        // Path loss 38 → 8 → 38 dB over 600 reports, with ±4 dB of noise.
        rssiPattern = (0..<600).map { step in
            let phase = Double(step < 300 ? step : 600 - step) / 300
            return -59 - Int(38 - 30 * phase) + Int.random(in: -4...4, using: &generator)
        }
        controller = AccessController(
            automaticAccessEnabled: true,
            credentials: CredentialAvailability(mobileSites: [site], aperioSites: [site]))
    }

    var registrySize: Int { registry.count }

    mutating func run(_ count: Int) {
        let readers = payloads.count
        let address = DeviceAddress(rawValue: 0x00BB_0100_0000)
        for _ in 0..<count {
            let reader = position % readers
            let rssi = rssiPattern[(position / readers + reader) % rssiPattern.count]
            position &+= 1
            // 10,000 advertisements a simulated second, whatever the reader count.
            now = now + .microseconds(100)
            guard let advertisement = try? ReaderAdvertisement(serviceData: payloads[reader]) else { continue }
            let observation = registry.observe(advertisement, rssi: rssi, address: address, name: nil, at: now)
            if observation.isInAutoConnectRange || observation.autoConnectRangeChanged,
                let attributes = registry.reader(advertisement.readerID)
            {
                let actions = controller.handle(
                    .readerObserved(attributes, isInAutoConnectRange: observation.isInAutoConnectRange), at: now)
                perform(actions)
            }
            if !pendingEnds.isEmpty {
                // Exchanges finish at once: the machine keeps cycling through approaches.
                let ended = pendingEnds
                pendingEnds.removeAll(keepingCapacity: true)
                for reader in ended {
                    perform(
                        controller.handle(
                            .exchangeEnded(reader, .decided(AccessResult(decision: .granted, mode: .access))), at: now))
                }
            }
        }
    }

    private mutating func perform(_ actions: [AccessController.Action]) {
        for action in actions {
            switch action {
            case .startExchange(let reader, _, _):
                exchangesStarted += 1
                pendingEnds.append(reader)
            case .startTimer(let timer, _):
                // Timers fire immediately here: the selection window and cooldowns are
                // the machine's business, the benchmark only keeps it moving.
                perform(controller.handle(.timerFired(timer), at: now + .seconds(10)))
            default:
                break
            }
        }
    }
}
