/// The second half of the `trendGated` range filter: decides whether a reader whose fast
/// estimate just fell below the auto-connect threshold is being approached, or only looks
/// nearer for a few noisy reports.
///
/// A fast estimate that follows a walk-up within one or two advertisements also dips below
/// the threshold when someone stands a few dB outside it: with σ = 4 dB of noise, the
/// median-and-average filter alone let a person standing 3 dB outside auto range in about
/// twice an hour (`accessbench range`). What tells the two apart is what happened over
/// the last second: a walk-up's path loss has fallen by several dB (at 1.4 m/s, about
/// 12 dB/s near 1 m), a standing person's has not. So the gate keeps a slow average of the
/// fast stage's medians (time constant `slowTimeConstant`) and opens when either
///
/// - that average fell by at least `approachDrop` dB over the last `trendSpan` (someone is
///   walking up), or
/// - the average itself is `settledMargin` dB inside the threshold (someone arrived
///   slowly).
///
/// In a reader's first `trendSpan` (first heard, or back after expiry) there is no trend
/// yet and the gate stays open: the first reports are judged as before.
///
/// The slow average starts as a running mean (weight 1/n) so that its first values are
/// averages, not single samples. Fixed size, no allocation: one per reader, updated on every
/// advertisement.
public struct ApproachGate: Sendable {
    public struct Parameters: Hashable, Sendable {
        /// Fall of the slow average over `trendSpan` that counts as an approach (dB).
        public var approachDrop: Double
        /// How far inside the threshold the slow average opens the gate on its own (dB).
        public var settledMargin: Double
        public var trendSpan: Duration
        public var slowTimeConstant: Duration

        public init(
            approachDrop: Double = 3.5, settledMargin: Double = 2,
            trendSpan: Duration = .seconds(1), slowTimeConstant: Duration = .seconds(2)
        ) {
            self.approachDrop = approachDrop
            self.settledMargin = settledMargin
            self.trendSpan = trendSpan
            self.slowTimeConstant = slowTimeConstant
        }

        public static let `default` = Parameters()
    }

    /// Checkpoints of the slow average, at least `trendSpan / 10` apart: enough to find one
    /// about `trendSpan` old at any advertising rate.
    private static let checkpointCount = 12
    private var checkpoints = InlineArray<12, Checkpoint>(repeating: .empty)
    private var newest = -1
    private var samples = 0
    private var lastTime: Timestamp?
    /// The slow average (dB), nil before the first sample.
    public private(set) var slowAverage: Double?

    public init() {}

    private struct Checkpoint: Sendable {
        var time: Timestamp
        var value: Double
        static let empty = Checkpoint(time: .zero, value: .nan)
    }

    /// Adds the fast stage's median at `time`.
    public mutating func add(_ median: Double, at time: Timestamp, parameters: Parameters) {
        samples += 1
        if let average = slowAverage, let lastTime {
            // elapsed / (τ + elapsed): the weight of an exponential average with time constant
            // τ for irregular intervals, to first order (1 − e^(−t/τ) without libm), 0.048 at
            // 100 ms and 2 s.
            let elapsed = max(0, (time - lastTime).secondsValue)
            let weight = max(elapsed / (parameters.slowTimeConstant.secondsValue + elapsed), 1 / Double(samples))
            slowAverage = average + weight * (median - average)
        } else {
            slowAverage = median
        }
        lastTime = time
        let spacing = parameters.trendSpan / 10
        if newest < 0 || time - checkpoints[newest].time >= spacing {
            newest = (newest + 1) % Self.checkpointCount
            checkpoints[newest] = Checkpoint(time: time, value: slowAverage ?? median)
        }
    }

    /// Whether a fast estimate below `threshold` is an approach (see the type's comment).
    public func opens(below threshold: Double, parameters: Parameters) -> Bool {
        guard let average = slowAverage, let lastTime else { return false }
        // The newest checkpoint at least `trendSpan` old: the average then.
        var earlier: Double?
        var index = newest
        for _ in 0..<Self.checkpointCount {
            let point = checkpoints[index]
            if point.value.isNaN { break }
            if lastTime - point.time >= parameters.trendSpan {
                earlier = point.value
                break
            }
            index = (index + Self.checkpointCount - 1) % Self.checkpointCount
        }
        guard let earlier else {
            // Heard for less than `trendSpan` (just appeared, or accessd just started): no
            // trend yet, so the fast estimate decides alone, as the median-and-average filter
            // does. A reader first heard at the door opens at once; the price is that a person
            // standing 3 dB outside when the reader is first heard gets in about one time in
            // five (the first report alone is the estimate then), once.
            return true
        }
        return average <= threshold - parameters.settledMargin || average - earlier <= -parameters.approachDrop
    }

    /// Moves every value by `delta` dB (the reader's offset changed).
    public mutating func shift(by delta: Double) {
        slowAverage = slowAverage.map { $0 + delta }
        for index in 0..<Self.checkpointCount { checkpoints[index].value += delta }
    }

    public mutating func reset() { self = ApproachGate() }
}
