/// Parameters of range estimation (docs/reader-protocol.md §3 explains each choice).
public struct RangeConfiguration: Hashable, Sendable {
    /// How a reader's path loss becomes "in auto-connect range".
    public var filter: RangeFilter
    /// The `trendGated` filter's gate.
    public var gate: ApproachGate.Parameters
    /// dB added to every measured path loss, like the SDK's `BluetoothConnectionSensitivity`:
    /// negative values make readers seem nearer (more eager), positive ones further.
    public var sensitivityOffset: Double
    /// Weight of a new median in the exponential moving average (0 < α ≤ 1) when it is
    /// above the average: the reader seems to recede.
    public var smoothingFactor: Double
    /// Weight of a new median below the average: the reader seems nearer. Larger than
    /// `smoothingFactor`, so that an approach is noticed sooner; leaving range still
    /// follows `smoothingFactor` and the exit margin.
    public var approachSmoothingFactor: Double
    /// How far (dB) the smoothed path loss must rise above `autoConnectPathLoss` before a
    /// reader counts as having left auto-connect range: the hysteresis against flapping.
    public var autoRangeExitMargin: Double
    /// How long the smoothed path loss must stay above `manualConnectPathLoss` before the
    /// reader expires (becomes unavailable).
    public var expiryDelay: Duration
    /// A reader not heard for this long is unavailable.
    public var staleTimeout: Duration
    /// Samples in the first stage's median, 1 to 5; nil: the filter's own (3 for
    /// `trendGated`, 5 for `medianAverage`). 1 follows a walk-up one advertisement sooner and
    /// lets more noise through (`accessbench range`).
    public var medianWindow: Int?

    /// The median's window in use.
    public var effectiveMedianWindow: Int {
        min(max(medianWindow ?? filter.medianWindow, 1), RangeEstimator.windowSize)
    }

    public init(
        filter: RangeFilter = .trendGated,
        gate: ApproachGate.Parameters = .default,
        sensitivityOffset: Double = 0,
        smoothingFactor: Double = 0.2,
        approachSmoothingFactor: Double = 0.5,
        autoRangeExitMargin: Double = 8,
        expiryDelay: Duration = .seconds(5),
        staleTimeout: Duration = .seconds(10),
        medianWindow: Int? = nil
    ) {
        self.medianWindow = medianWindow
        self.filter = filter
        self.gate = gate
        self.sensitivityOffset = sensitivityOffset
        self.smoothingFactor = smoothingFactor
        self.approachSmoothingFactor = approachSmoothingFactor
        self.autoRangeExitMargin = autoRangeExitMargin
        self.expiryDelay = expiryDelay
        self.staleTimeout = staleTimeout
    }

    public static let `default` = RangeConfiguration()
}

/// The range filters (docs/reader-protocol.md §3, `[range] filter`).
public enum RangeFilter: String, Hashable, Sendable, CaseIterable {
    /// Median of 3, the two-weight average, and the `ApproachGate`: in range within one or
    /// two advertisements of a walk-up's crossing, not for someone standing near the line.
    case trendGated = "trend_gated"
    /// Median of 5 and the two-weight average alone (accessd before 0.3).
    case medianAverage = "median_average"

    var medianWindow: Int { self == .trendGated ? 3 : RangeEstimator.windowSize }
}

/// Named sensitivity presets, with the names and offsets of the SDK's
/// `BluetoothConnectionSensitivity` (`VERY_LOW` −5 dB, `LOW` −2.5 dB, `NORMAL` 0): a lower
/// sensitivity subtracts more from the measured path loss, so readers seem nearer.
public enum ConnectionSensitivity: String, Sendable, CaseIterable {
    case veryLow, low, normal

    /// dB added to the measured path loss.
    public var pathLossOffset: Double {
        switch self {
        case .veryLow: -5
        case .low: -2.5
        case .normal: 0
        }
    }

    /// The names accessd used before 0.2, which ran opposite to the SDK's (`high` was −5 dB):
    /// still read, with a warning. Their `low` (0 dB) is not here: `low` is the SDK's now.
    public static let formerNames: [String: ConnectionSensitivity] = ["high": .veryLow, "medium": .low]
}
