/// One reader's health as one kiosk hears it at the end of an interval: what accessd
/// publishes (`reader.health` events; the retained MQTT topic `readers/<id>/health`; the
/// Prometheus per-reader gauges).
public struct ReaderHealthRecord: Hashable, Sendable {
    public var reader: ReaderID
    public var name: String?
    /// Sorted; empty when nothing is wrong.
    public var problems: [ReaderHealthProblem]
    /// The last interval's rate; nil when the kiosk did not listen all of it (scanning off,
    /// the adapter recovering) or the reader was connected meanwhile.
    public var advertisementsPerMinute: Double?
    /// The learned usual rate; nil while learning.
    public var usualPerMinute: Double?
    /// Median and interquartile spread of the last path-loss samples (dB), and how many.
    public var pathLossMedian: Double?
    public var pathLossSpread: Double?
    public var pathLossSamples: Int
    /// Exchanges over the last `exchangeWindow`.
    public var granted: Int
    public var denied: Int
    public var failed: [ReaderExchangeResult.Phase: Int]
    public var exchangeWindow: Duration
    /// Since the reader was last heard, at the end of the interval.
    public var heardAgo: Duration
    /// The interval's length (`ReaderHealthPolicy.interval`).
    public var interval: Duration

    public var failedTotal: Int { failed.values.reduce(0, +) }
}

/// A sorted list of samples' median and interquartile range (linear interpolation between
/// ranks, as numpy's default).
enum Quantiles {
    static func quantile(_ sorted: [Double], _ q: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let position = q * Double(sorted.count - 1)
        let lower = Int(position)
        let upper = min(lower + 1, sorted.count - 1)
        let fraction = position - Double(lower)
        return sorted[lower] + (sorted[upper] - sorted[lower]) * fraction
    }

    static func median(_ values: [Int]) -> Double {
        quantile(values.map(Double.init).sorted(), 0.5)
    }
}
