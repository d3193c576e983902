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

    public init(state: String, recoveries: [RecoveryCount], retryInSeconds: Int? = nil) {
        self.state = state
        self.recoveries = recoveries
        self.retryInSeconds = retryInSeconds
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
