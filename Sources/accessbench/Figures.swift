/// The arithmetic of printed figures: percentiles, milliseconds, rounding.
enum Figures {
    /// The `p` quantile (0…1) of `values`, nearest rank; NaN for none.
    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    /// Three decimals, or `null` for NaN (JSON).
    static func round3(_ value: Double) -> String {
        value.isNaN ? "null" : String(Double(Int((value * 1000).rounded())) / 1000)
    }
}
