import AccessCore
import ArgumentParser
import Foundation

/// `accessbench range`: the range filters on generated RSSI traces (issue #15, item 3).
///
/// Every trace goes through the real `ReaderRegistry` on a virtual clock, advertisement by
/// advertisement, and an exchange is counted as the auto-connect machine would start one:
/// when the reader enters auto-connect range, if it left range since the last exchange and
/// the 10 s cooldown is over. Path loss follows distance as in free space (n = 2), with the
/// reader's auto-connect threshold at 1 m: PL(d) = auto + 20·log10(d / 1 m). Noise is
/// Gaussian with σ dB on every report, rounded to whole dBm as HCI reports RSSI.
struct RangeStudy: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "range",
        abstract: "False exchanges and detection delay of the range filters on simulated walk-ups (no Bluetooth)."
    )

    @Option(help: "Hours a person stands 3 dB outside auto range (one trace), per noise level.")
    var hours = 10

    @Option(help: "Passes (walking past at 2 m) and approaches (walking up and stopping) per noise level.")
    var walks = 1000

    @Option(help: "Seed of the noise.")
    var seed: UInt64 = 1

    @Option(help: "[range] approach_smoothing for both filters (default 0.5).")
    var approachSmoothing = 0.5

    @Option(help: "[range] median_window for both filters (default: each filter's own, 3 and 5).")
    var medianWindow: Int?

    @Flag(help: "One JSON object per filter and noise level instead of the table.")
    var json = false

    static let rate = 10.0  // advertisements per second
    static let threshold = 20.0
    static let advertisement = ReaderAdvertisement(
        kind: .gallagherStyle, flags: [.autoConnectEnabled, .manualConnectEnabled], readerID: ReaderID(0x2A01),
        txPower: -59,
        autoConnectPathLoss: UInt8(threshold), manualConnectPathLoss: 40, siteTag: SiteTag(0x5117_E001))

    func run() throws {
        if !json {
            print(
                "range filters, \(Int(Self.rate)) advertisements/s, auto threshold at 1 m, free-space path loss, seed \(seed)"
                    + (approachSmoothing == 0.5 ? "" : ", approach_smoothing \(approachSmoothing)")
                    + (medianWindow.map { ", median_window \($0)" } ?? ""))
            print("filter            σ dB   false exchanges/h   walk past at 2 m   walk-up delay (adverts)   missed")
            print("                         standing +3 dB      (exchanges)        p50 / p95 / max")
        }
        for filter in [RangeFilter.medianAverage, .trendGated] {
            for sigma in [4.0, 8.0] {
                var noise = GaussianNoise(seed: seed &+ UInt64(sigma))
                let range = RangeConfiguration(
                    filter: filter, approachSmoothingFactor: approachSmoothing,
                    medianWindow: medianWindow)
                // One person standing for all the hours: the reader heard once, then for hours.
                let samples = Array(repeating: Self.threshold + 3, count: hours * Int(3600 * Self.rate))
                let standing = Self.exchanges(samples.map { $0 + noise.next(sigma) }, range: range).count
                var passes = 0
                for _ in 0..<walks
                where !Self.exchanges(Self.walkPast().map { $0 + noise.next(sigma) }, range: range).isEmpty {
                    passes += 1
                }
                var delays: [Int] = []
                var missed = 0
                for _ in 0..<walks {
                    let (truth, crossing) = Self.walkUp()
                    if let first = Self.exchanges(truth.map { $0 + noise.next(sigma) }, range: range).first {
                        delays.append(first - crossing)
                    } else {
                        missed += 1
                    }
                }
                delays.sort()
                let p50 = delays.isEmpty ? 0 : delays[delays.count / 2]
                let p95 = delays.isEmpty ? 0 : delays[min(delays.count - 1, delays.count * 95 / 100)]
                let perHour = Double(standing) / Double(max(hours, 1))
                if json {
                    print(
                        "{\"filter\":\"\(filter.rawValue)\",\"sigma\":\(sigma),\"falsePerHour\":\(perHour),"
                            + "\"walkPastExchanges\":\(passes),\"walks\":\(walks),\"delayP50\":\(p50),\"delayP95\":\(p95),"
                            + "\"delayMax\":\(delays.last ?? 0),\"missed\":\(missed)}")
                } else {
                    let delay = "\(p50) / \(p95) / \(delays.last ?? 0)"
                    func column(_ text: String, _ width: Int) -> String {
                        text.padding(toLength: width, withPad: " ", startingAt: 0)
                    }
                    print(
                        column(filter.rawValue, 18) + String(format: "%4.0f   %17.2f   ", sigma, perHour)
                            + column("\(passes) / \(walks)", 19) + column(delay, 26) + "\(missed)")
                }
            }
        }
    }

    /// The path loss at `distance` metres.
    static func pathLoss(_ distance: Double) -> Double { threshold + 20 * log10(max(distance, 0.05)) }

    /// Walking at 1.4 m/s along a line 2 m from the reader, from 10 m before it to 10 m after.
    static func walkPast() -> [Double] {
        stride(from: -10.0, to: 10.0, by: 1.4 / rate).map { pathLoss(hypot($0, 2)) }
    }

    /// Walking straight up from 8 m at 1.4 m/s, stopping at 0.5 m for 10 s; and the report at
    /// which the path loss without noise crossed the threshold.
    static func walkUp() -> (samples: [Double], crossing: Int) {
        var samples = stride(from: 8.0, to: 0.5, by: -1.4 / rate).map(pathLoss)
        samples += Array(repeating: pathLoss(0.5), count: Int(10 * rate))
        return (samples, samples.firstIndex { $0 < threshold } ?? 0)
    }

    /// The reports at which an exchange would start.
    static func exchanges(_ pathLosses: [Double], range: RangeConfiguration) -> [Int] {
        var registry = ReaderRegistry(range: range)
        var started: [Int] = []
        var armed = true
        var lastExchange = -Int.max / 2
        let cooldown = Int(10 * rate)
        let address = DeviceAddress("C0:00:00:00:2A:01")!
        for (report, pathLoss) in pathLosses.enumerated() {
            let rssi = Int((Double(advertisement.txPower) - pathLoss).rounded())
            let now = Timestamp(nanoseconds: Int64(report) * Int64(1e9 / rate))
            let observation = registry.observe(
                advertisement, rssi: max(-127, min(20, rssi)), address: address, name: nil, at: now)
            guard observation.autoConnectRangeChanged else { continue }
            if observation.isInAutoConnectRange {
                if armed && report - lastExchange >= cooldown {
                    started.append(report)
                    armed = false
                    lastExchange = report
                }
            } else {
                armed = true
            }
        }
        return started
    }
}

/// Gaussian noise from a seeded SplitMix64 (Box–Muller), so that a study replays exactly.
struct GaussianNoise {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    private mutating func uniform() -> Double {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return (Double((z ^ (z >> 31)) >> 11) + 0.5) / Double(1 << 53)
    }

    mutating func next(_ sigma: Double) -> Double {
        sigma * (-2 * log(uniform())).squareRoot() * cos(2 * .pi * uniform())
    }
}
