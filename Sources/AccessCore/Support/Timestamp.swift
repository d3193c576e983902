/// A point on a monotonic clock, in nanoseconds from an arbitrary origin.
///
/// The core never reads a clock: every input that depends on time carries a `Timestamp`
/// supplied by the shell (production: `CLOCK_MONOTONIC`; tests: a virtual clock).
public struct Timestamp: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) {
        self.nanoseconds = nanoseconds
    }

    public static let zero = Timestamp(nanoseconds: 0)

    public static func seconds(_ seconds: Double) -> Timestamp {
        Timestamp(nanoseconds: Int64(seconds * 1e9))
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    public static func + (lhs: Timestamp, rhs: Duration) -> Timestamp {
        Timestamp(nanoseconds: lhs.nanoseconds &+ rhs.nanoseconds)
    }

    public static func - (lhs: Timestamp, rhs: Timestamp) -> Duration {
        .nanoseconds(lhs.nanoseconds &- rhs.nanoseconds)
    }

    public var description: String {
        "\(Double(nanoseconds) / 1e9)s"
    }
}

extension Duration {
    /// Whole nanoseconds, saturating: the durations the core deals in are far below the limit.
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled &+ attoseconds / 1_000_000_000
    }

    /// Seconds as a floating-point value, for logs and JSON.
    public var secondsValue: Double {
        Double(nanoseconds) / 1e9
    }
}
