/// Smooths one reader's path loss: the median of the last five samples (which discards
/// single outliers, common when a body or a door blocks one packet), then an exponential
/// moving average of those medians (which removes the remaining jitter). The average may
/// follow a falling median (the person approaching) faster than a rising one: a door opens
/// sooner, while leaving range, and with it flapping, stays as slow as before.
///
/// Fixed size, no allocation: the registry keeps one per reader and updates it on every
/// advertisement.
public struct RangeEstimator: Sendable {
    public static let windowSize = 5

    /// Samples in the median: 5 (`RangeFilter.medianAverage`) or 3 (`.trendGated`, whose
    /// gate stands against noise instead, and whose median lags one report less).
    private var window = Self.windowSize

    private var s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0
    private var count = 0
    private var next = 0
    /// The smoothed path loss in dB, nil before the first sample.
    public private(set) var smoothed: Double?

    public init() {}

    /// A median of `window` samples, 1 to 5 (clamped: the ring holds five).
    public init(window: Int) {
        self.window = min(max(window, 1), Self.windowSize)
    }

    /// Adds one measured path loss (dB) and returns the new smoothed value. `alpha` weighs
    /// a median above the average (receding), `approachAlpha` one below it (approaching);
    /// nil means `alpha` for both.
    @discardableResult
    public mutating func add(
        _ pathLoss: Double, smoothingFactor alpha: Double,
        approachSmoothingFactor approachAlpha: Double? = nil
    ) -> Double {
        switch next {
        case 0: s0 = pathLoss
        case 1: s1 = pathLoss
        case 2: s2 = pathLoss
        case 3: s3 = pathLoss
        default: s4 = pathLoss
        }
        next = next == window - 1 ? 0 : next + 1
        if count < window { count += 1 }

        let median = currentMedian()
        let value = smoothed.map { $0 + (median < $0 ? approachAlpha ?? alpha : alpha) * (median - $0) } ?? median
        smoothed = value
        return value
    }

    /// Moves every sample and the average by `delta` dB: a reader's offset changed, and its
    /// distance must follow at once, not over the next samples.
    public mutating func shift(by delta: Double) {
        s0 += delta
        s1 += delta
        s2 += delta
        s3 += delta
        s4 += delta
        smoothed = smoothed.map { $0 + delta }
    }

    /// Forgets every sample: used when a reader comes back after being unavailable, so
    /// that an old distance does not leak into a new approach.
    public mutating func reset() {
        self = RangeEstimator(window: window)
    }

    /// The median of the samples in the window (meaningless before the first).
    public var median: Double { currentMedian() }

    private func currentMedian() -> Double {
        switch count {
        case 1: return s0
        case 2: return (s0 + s1) / 2
        case 3: return Self.median3(s0, s1, s2)
        case 4:
            // Mean of the middle two of four.
            let low = min(min(s0, s1), min(s2, s3))
            let high = max(max(s0, s1), max(s2, s3))
            return (s0 + s1 + s2 + s3 - low - high) / 2
        default:
            return Self.median5(s0, s1, s2, s3, s4)
        }
    }

    private static func median3(_ a: Double, _ b: Double, _ c: Double) -> Double {
        max(min(a, b), min(max(a, b), c))
    }

    private static func median5(_ a: Double, _ b: Double, _ c: Double, _ d: Double, _ e: Double) -> Double {
        // Discard the smaller of the two pair minima and the larger of the two pair maxima:
        // neither can be the median. The median of the remaining three (with e) is the answer.
        var (a, b, c, d) = (a, b, c, d)
        if a > b { swap(&a, &b) }
        if c > d { swap(&c, &d) }
        // Now a ≤ b, c ≤ d. The smaller of a and c is below at least three values: drop it.
        if a < c {
            // drop a; remaining b, c, d, e with c ≤ d
            var (x, y) = (b, e)
            if x > y { swap(&x, &y) }
            // drop the larger of the two maxima (d or y): it is above three others.
            return d < y ? median3(x, c, d) : median3(x, c, y)
        } else {
            // drop c; remaining a, b, d, e with a ≤ b
            var (x, y) = (d, e)
            if x > y { swap(&x, &y) }
            return b < y ? median3(a, b, x) : median3(a, x, y)
        }
    }
}
