/// `radio.recovery`: a step of the adapter's recovery ladder (docs/bluez.md, "A radio that
/// stops hearing"), one event per step, so a fleet alerts on `step` = `stuck` with one
/// journal `MESSAGE_ID` for every kiosk.
public struct RadioRecoveryEvent: ControlEventData {
    public static let kind = EventKind.radioRecovery
    /// The adapter (`hci1`).
    public var adapter: String
    public var step: Step
    /// How long the adapter had heard nothing (every step but `cannotPowerCycle`).
    public var silentSeconds: Int?
    /// `recovered`: the rung after which it heard again (`restartDiscovery`, `powerCycle`).
    public var after: String?
    /// `stuck`: seconds until the next power cycle.
    public var retryInSeconds: Int?
    /// `cannotPowerCycle`: bluetoothd's answer.
    public var error: String?
    /// `switchedAdapter`: the adapter left (`adapter` is the one taken), nil when there was none.
    public var previous: String?
    /// `switchedAdapter`: why (`removed`, `poweredOff`, `blocked`, `unfit`, `stuck`,
    /// `preferredBack`, `present`).
    public var reason: String?

    public init(
        adapter: String, step: Step, silentSeconds: Int? = nil, after: String? = nil, retryInSeconds: Int? = nil,
        error: String? = nil, previous: String? = nil, reason: String? = nil
    ) {
        self.previous = previous
        self.reason = reason
        self.adapter = adapter
        self.step = step
        self.silentSeconds = silentSeconds
        self.after = after
        self.retryInSeconds = retryInSeconds
        self.error = error
    }

    public var event: ControlEvent { .radioRecovery(self) }

    public struct Step: RawRepresentable, Codable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Heard nothing: discovery is being restarted.
        public static let restartingDiscovery = Self(rawValue: "restartingDiscovery")
        /// Still nothing: the adapter is being powered off and on through bluetoothd.
        public static let powerCycling = Self(rawValue: "powerCycling")
        /// bluetoothd refused the power cycle.
        public static let cannotPowerCycle = Self(rawValue: "cannotPowerCycle")
        /// Nothing after every rung: a person is needed (the ladder retries with backoff).
        public static let stuck = Self(rawValue: "stuck")
        /// Heard again.
        public static let recovered = Self(rawValue: "recovered")
        /// Scanning moved to another adapter (`previous` to `adapter`, for `reason`).
        public static let switchedAdapter = Self(rawValue: "switchedAdapter")
    }
}
