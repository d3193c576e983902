/// How far a reader seems, in the SDK's three buckets. Raw values are the SDK's.
public enum ReaderDistance: Int, Sendable, CaseIterable, CustomStringConvertible {
    case far = 0
    case medium = 1
    case near = 2

    public var description: String {
        switch self {
        case .far: "far"
        case .medium: "medium"
        case .near: "near"
        }
    }

    /// The SDK's `ReaderDistance.calculate`: the measured path loss placed between the
    /// auto-connect threshold (near) and the manual-connect limit (far).
    ///
    /// `manual = min(manualConnectPathLoss, 100 + txPower)`, `auto = max(15, autoConnectPathLoss)`;
    /// near when `manualConnectPathLoss <= 0` or `manual − auto < 5`; otherwise
    /// `r = (measured − auto) / (manual − auto)`: near below 0.4, medium below 0.75, far above.
    public static func calculate(
        measuredPathLoss: Double,
        autoConnectPathLoss: Double,
        manualConnectPathLoss: Double,
        txPower: Double
    ) -> ReaderDistance {
        let manual = min(manualConnectPathLoss, 100 + txPower)
        let auto = max(15, autoConnectPathLoss)
        if manualConnectPathLoss <= 0 || manual - auto < 5 { return .near }
        let ratio = (measuredPathLoss - auto) / (manual - auto)
        if ratio < 0.4 { return .near }
        if ratio < 0.75 { return .medium }
        return .far
    }
}
