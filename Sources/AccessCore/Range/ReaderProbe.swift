/// What a field engineer's probe of one reader collects (`readers.probe`, `accessctl probe`):
/// every advertisement heard for some seconds, and the figures a person standing at the door
/// needs from them: how regularly the reader advertises, how steady the radio is here, which
/// range the holder is in, and, for a calibration, the thresholds that would open the door
/// from exactly here. Pure: samples in, figures out.
public struct ReaderProbe: Sendable {
    public struct Sample: Sendable, Equatable {
        public var time: Timestamp
        public var rssi: Int
        /// The reader's advertised transmit power minus the RSSI: this one advertisement's path loss.
        public var rawPathLoss: Double
        /// The registry's smoothed path loss after it (what range decisions use).
        public var pathLoss: Double

        public init(time: Timestamp, rssi: Int, rawPathLoss: Double, pathLoss: Double) {
            self.time = time
            self.rssi = rssi
            self.rawPathLoss = rawPathLoss
            self.pathLoss = pathLoss
        }
    }

    /// Min, median, max, mean and standard deviation of a series.
    public struct Figures: Sendable, Equatable {
        public var min: Double
        public var median: Double
        public var max: Double
        public var mean: Double
        public var deviation: Double

        init?(_ values: [Double]) {
            guard !values.isEmpty else { return nil }
            let sorted = values.sorted()
            let middle = sorted.count / 2
            min = sorted[0]
            max = sorted[sorted.count - 1]
            median = sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
            mean = values.reduce(0, +) / Double(values.count)
            let mean = self.mean
            deviation = (values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(values.count)).squareRoot()
        }
    }

    /// Thresholds that put the edge of a range where the probe stood: the path loss measured
    /// there plus a margin against the noise seen, so that standing there is inside.
    public struct Calibration: Sendable, Equatable {
        public var autoConnectPathLoss: Int
        public var manualConnectPathLoss: Int
        /// dB added to the median: twice the deviation, at least 2 dB.
        public var margin: Double
    }

    public struct Summary: Sendable, Equatable {
        public var advertisements: Int
        /// Milliseconds between consecutive advertisements.
        public var interval: Figures?
        public var rssi: Figures?
        public var rawPathLoss: Figures?
        public var pathLoss: Figures?
        /// Raw path loss in 2 dB bins: (the bin's lower bound, how many).
        public var histogram: [(lower: Int, count: Int)]
        public var calibration: Calibration?

        public static func == (lhs: Summary, rhs: Summary) -> Bool {
            lhs.advertisements == rhs.advertisements && lhs.interval == rhs.interval && lhs.rssi == rhs.rssi
                && lhs.rawPathLoss == rhs.rawPathLoss && lhs.pathLoss == rhs.pathLoss
                && lhs.calibration == rhs.calibration
                && lhs.histogram.map(\.lower) == rhs.histogram.map(\.lower)
                && lhs.histogram.map(\.count) == rhs.histogram.map(\.count)
        }
    }

    /// A probe keeps at most this many samples (60 s of a reader advertising every 10 ms).
    public static let maximumSamples = 6_000
    public static let binWidth = 2

    public private(set) var samples: [Sample] = []
    /// Samples not kept because the probe was full.
    public private(set) var dropped = 0

    public init() {}

    public mutating func add(_ sample: Sample) {
        guard samples.count < Self.maximumSamples else {
            dropped += 1
            return
        }
        samples.append(sample)
    }

    /// The figures; `thresholds` (the reader's advertised auto and manual path loss) keep the
    /// reader's own gap between them in a calibration, which needs at least 5 samples.
    public func summary(thresholds: (auto: Int, manual: Int)) -> Summary {
        let intervals = zip(samples.dropFirst(), samples).map { Double(($0.time - $1.time).nanoseconds) / 1e6 }
        let raw = samples.map(\.rawPathLoss)
        var bins: [Int: Int] = [:]
        for value in raw where value.isFinite {
            let lower = Int((value / Double(Self.binWidth)).rounded(.down)) * Self.binWidth
            bins[lower, default: 0] += 1
        }
        var calibration: Calibration?
        if samples.count >= 5, let figures = Figures(raw) {
            let margin = Swift.max(2, 2 * figures.deviation)
            let auto = Int((figures.median + margin).rounded(.up))
            calibration = Calibration(
                autoConnectPathLoss: auto,
                manualConnectPathLoss: auto + Swift.max(0, thresholds.manual - thresholds.auto),
                margin: margin)
        }
        return Summary(
            advertisements: samples.count, interval: Figures(intervals), rssi: Figures(samples.map { Double($0.rssi) }),
            rawPathLoss: Figures(raw), pathLoss: Figures(samples.map(\.pathLoss)),
            histogram: bins.sorted { $0.key < $1.key }.map { (lower: $0.key, count: $0.value) },
            calibration: calibration)
    }
}
