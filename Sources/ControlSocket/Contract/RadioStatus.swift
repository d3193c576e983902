/// `status.get`'s `radio`: the recovery ladder of the adapter in use (docs/bluez.md, "A radio
/// that stops hearing").
public struct RadioStatus: Codable, Sendable, Hashable {
    /// `idle` (not scanning), `listening`, `restartedDiscovery`, `powerCycling`,
    /// `powerCycled` (waiting to hear after one), `stuck`.
    public var state: String
    /// Rungs taken since start, by how they ended.
    public var recoveries: [RecoveryCount]
    /// When the adapter is stuck: seconds until the next power cycle.
    public var retryInSeconds: Int?
    /// Why the adapter cannot do the job (no LE central role), when it cannot: it is not
    /// used, and the SDK state is `errorDeviceNotSupported`.
    public var unfit: String?

    public init(state: String, recoveries: [RecoveryCount], retryInSeconds: Int? = nil, unfit: String? = nil) {
        self.state = state
        self.recoveries = recoveries
        self.retryInSeconds = retryInSeconds
        self.unfit = unfit
    }
}

/// One rung (`restartDiscovery`, `powerCycle`) and one result (`recovered`, `silent`,
/// `failed`), counted.
public struct RecoveryCount: Codable, Sendable, Hashable {
    public var rung: String
    public var result: String
    public var count: Int

    public init(rung: String, result: String, count: Int) {
        self.rung = rung
        self.result = result
        self.count = count
    }
}
