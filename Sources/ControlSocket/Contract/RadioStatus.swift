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
    /// Every adapter accessd may use (`[bluetooth] adapters`), in preference order, and what
    /// each is doing; absent from an accessd before 0.2.
    public var adapters: [AdapterRole]?

    public init(
        state: String, recoveries: [RecoveryCount], retryInSeconds: Int? = nil, unfit: String? = nil,
        adapters: [AdapterRole]? = nil
    ) {
        self.state = state
        self.recoveries = recoveries
        self.retryInSeconds = retryInSeconds
        self.unfit = unfit
        self.adapters = adapters
    }
}

/// One adapter and its part (docs/bluez.md, "Several adapters").
public struct AdapterRole: Codable, Sendable, Hashable {
    /// `hci1`.
    public var name: String
    public var role: Role
    /// `quarantined`: seconds until it may be taken again.
    public var quarantineSeconds: Int?

    public init(name: String, role: Role, quarantineSeconds: Int? = nil) {
        self.name = name
        self.role = role
        self.quarantineSeconds = quarantineSeconds
    }

    public struct Role: RawRepresentable, Codable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// accessd scans on it.
        public static let inUse = Self(rawValue: "inUse")
        /// Usable, and taken if the one in use fails.
        public static let standby = Self(rawValue: "standby")
        /// Left after it went deaf (silent, or stuck): not taken before its quarantine ends.
        public static let quarantined = Self(rawValue: "quarantined")
        /// Powered off.
        public static let off = Self(rawValue: "off")
        /// Blocked by rfkill.
        public static let blocked = Self(rawValue: "blocked")
        /// Cannot do the job (`unfit` says why for the adapter in use).
        public static let unfit = Self(rawValue: "unfit")
        /// Listed in `[bluetooth] adapters` and not present.
        public static let absent = Self(rawValue: "absent")
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
