/// The data of each event kind but `reader.updated` (a `ReaderInfo`, as `readers.list`
/// gives) and `access.completed` (an `ExchangeAnswer`, as `access.request` answers). One
/// key per fact across kinds: a reader's id is `reader`, a credential's id `credential`.
/// Values that name one of a few cases are open string types (`Reason`, `Result`, …): a
/// client decodes a case added later instead of refusing the whole event.

/// `sdk.state`: the SDK state changed.
public struct SdkStateEvent: ControlEventData {
    public static let kind = EventKind.sdkState
    public var isScanning: Bool
    /// The SDK's `MobileAccessState` names, and Linux ones where they do not map.
    public var states: [String]
    /// Features whose last site call failed (`cloudConnection`, `itemSync`).
    public var featureErrors: [String]

    public init(isScanning: Bool, states: [String], featureErrors: [String]) {
        self.isScanning = isScanning
        self.states = states
        self.featureErrors = featureErrors
    }
}

/// `reader.unavailable`: a reader is no longer heard (or no longer can be).
public struct ReaderUnavailableEvent: ControlEventData {
    public static let kind = EventKind.readerUnavailable
    public var reader: String

    public init(reader: String) { self.reader = reader }

    private enum CodingKeys: String, CodingKey {
        case reader
        /// Protocol version 1 named the reader `id` here: still sent beside `reader`, and
        /// read when `reader` is absent (a journal written before it).
        case id
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        reader =
            try container.decodeIfPresent(String.self, forKey: .reader) ?? container.decode(String.self, forKey: .id)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(reader, forKey: .reader)
        try container.encode(reader, forKey: .id)
    }
}

/// `readers.scopeChanged`: an operator set or reset the scope of a reader, or of every reader.
public struct ReadersScopeChangedEvent: ControlEventData {
    public static let kind = EventKind.readersScopeChanged
    /// Absent: every reader.
    public var reader: String?
    /// Absent: reset to the configuration's.
    public var rule: ReaderRuleInfo?
    /// The uid of the client that asked.
    public var uid: Int

    public init(reader: String?, rule: ReaderRuleInfo?, uid: Int) {
        self.reader = reader
        self.rule = rule
        self.uid = uid
    }
}

/// `access.started`: an exchange with a reader starts.
public struct AccessStartedEvent: ControlEventData {
    public static let kind = EventKind.accessStarted
    public var reader: String
    public var readerName: String?
    /// `automatic` or `manual`.
    public var origin: String
    /// `openNext` when an open-next window started it.
    public var trigger: String?
    /// `access`, `actions.list` or `actions.perform N`.
    public var operation: String
    public var credential: String

    public init(
        reader: String, readerName: String?, origin: String, trigger: String?, operation: String, credential: String
    ) {
        self.reader = reader
        self.readerName = readerName
        self.origin = origin
        self.trigger = trigger
        self.operation = operation
        self.credential = credential
    }
}

/// `access.nextWindow`: an open-next window opened or closed.
public struct AccessNextWindowEvent: ControlEventData {
    public static let kind = EventKind.accessNextWindow
    public var state: State
    /// `socket` or `button`.
    public var openedBy: String
    public var expirySeconds: Int?
    /// The uid of the client that opened it (`socket`).
    public var uid: Int?
    /// Why it closed.
    public var reason: Reason?
    /// With `reason` `used`: the reader whose exchange follows.
    public var reader: String?

    public init(
        state: State, openedBy: String, expirySeconds: Int? = nil, uid: Int? = nil, reason: Reason? = nil,
        reader: String? = nil
    ) {
        self.state = state
        self.openedBy = openedBy
        self.expirySeconds = expirySeconds
        self.uid = uid
        self.reason = reason
        self.reader = reader
    }

    public struct State: RawRepresentable, Codable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let open = Self(rawValue: "open")
        public static let closed = Self(rawValue: "closed")
    }

    public struct Reason: RawRepresentable, Codable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let used = Self(rawValue: "used")
        public static let expired = Self(rawValue: "expired")
        public static let cancelled = Self(rawValue: "cancelled")
    }
}

/// `secondFactor.required`: a reader asks for the second factor.
public struct SecondFactorRequiredEvent: ControlEventData {
    public static let kind = EventKind.secondFactorRequired
    /// What `secondFactor.respond` and `.cancel` name.
    public var request: String
    public var reader: String
    public var credential: String
    public var prompt: String
    public var attemptsLeft: Int
    public var timeoutSeconds: Int

    public init(
        request: String, reader: String, credential: String, prompt: String, attemptsLeft: Int, timeoutSeconds: Int
    ) {
        self.request = request
        self.reader = reader
        self.credential = credential
        self.prompt = prompt
        self.attemptsLeft = attemptsLeft
        self.timeoutSeconds = timeoutSeconds
    }
}

/// `secondFactor.answered`: what became of a PIN given for a prompt (never the PIN).
public struct SecondFactorAnsweredEvent: ControlEventData {
    public static let kind = EventKind.secondFactorAnswered
    public var request: String
    public var reader: String
    public var credential: String
    public var result: Result
    /// After a wrong PIN.
    public var attemptsLeft: Int?

    public init(request: String, reader: String, credential: String, result: Result, attemptsLeft: Int? = nil) {
        self.request = request
        self.reader = reader
        self.credential = credential
        self.result = result
        self.attemptsLeft = attemptsLeft
    }

    public struct Result: RawRepresentable, Codable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let accepted = Self(rawValue: "accepted")
        public static let wrongPin = Self(rawValue: "wrongPin")
        public static let lockedOut = Self(rawValue: "lockedOut")
        public static let cancelled = Self(rawValue: "cancelled")
    }
}

/// `credentials.changed`: a credential was registered, deleted or changed.
public struct CredentialsChangedEvent: ControlEventData {
    public static let kind = EventKind.credentialsChanged
    public var reason: Reason
    /// Absent for observers: credential ids are the admin's.
    public var credential: String?
    /// `reason` `registered` or `state`: the credential's state now.
    public var state: String?
    /// `reason` `items`: what the sync changed.
    public var added: Int?
    public var updated: Int?
    public var removed: Int?
    /// `reason` `priority`.
    public var priority: Int?
    /// A deletion by replacement: the credential that replaced it.
    public var replacedBy: String?
    /// `reason` `registered`: the credential's key fingerprint (docs/site-api.md §3.1).
    public var fingerprint: String?

    public init(
        reason: Reason, credential: String?, state: String? = nil, added: Int? = nil, updated: Int? = nil,
        removed: Int? = nil, priority: Int? = nil, replacedBy: String? = nil, fingerprint: String? = nil
    ) {
        self.fingerprint = fingerprint
        self.reason = reason
        self.credential = credential
        self.state = state
        self.added = added
        self.updated = updated
        self.removed = removed
        self.priority = priority
        self.replacedBy = replacedBy
    }

    public struct Reason: RawRepresentable, Codable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let registered = Self(rawValue: "registered")
        public static let deleted = Self(rawValue: "deleted")
        public static let state = Self(rawValue: "state")
        public static let items = Self(rawValue: "items")
        public static let pinChanged = Self(rawValue: "pinChanged")
        public static let unlocked = Self(rawValue: "unlocked")
        public static let priority = Self(rawValue: "priority")
    }

    private enum CodingKeys: String, CodingKey {
        case reason, credential, state, added, updated, removed, priority, replacedBy, fingerprint
        /// Protocol version 1 named the credential `id` here: still sent beside `credential`,
        /// and read when `credential` is absent (a journal written before it).
        case id
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        reason = try container.decode(Reason.self, forKey: .reason)
        credential =
            try container.decodeIfPresent(String.self, forKey: .credential)
            ?? container.decodeIfPresent(String.self, forKey: .id)
        state = try container.decodeIfPresent(String.self, forKey: .state)
        added = try container.decodeIfPresent(Int.self, forKey: .added)
        updated = try container.decodeIfPresent(Int.self, forKey: .updated)
        removed = try container.decodeIfPresent(Int.self, forKey: .removed)
        priority = try container.decodeIfPresent(Int.self, forKey: .priority)
        replacedBy = try container.decodeIfPresent(String.self, forKey: .replacedBy)
        fingerprint = try container.decodeIfPresent(String.self, forKey: .fingerprint)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(reason, forKey: .reason)
        try container.encodeIfPresent(credential, forKey: .credential)
        try container.encodeIfPresent(credential, forKey: .id)
        try container.encodeIfPresent(state, forKey: .state)
        try container.encodeIfPresent(added, forKey: .added)
        try container.encodeIfPresent(updated, forKey: .updated)
        try container.encodeIfPresent(removed, forKey: .removed)
        try container.encodeIfPresent(priority, forKey: .priority)
        try container.encodeIfPresent(replacedBy, forKey: .replacedBy)
        try container.encodeIfPresent(fingerprint, forKey: .fingerprint)
    }

    /// As an observer receives it: without what names a credential (issue #17).
    public var forObservers: Self {
        var redacted = self
        redacted.credential = nil
        redacted.replacedBy = nil
        redacted.fingerprint = nil
        return redacted
    }
}

/// `events.lost`: events that could not be journalled and did not fit in memory.
public struct EventsLostEvent: ControlEventData {
    public static let kind = EventKind.eventsLost
    public var count: Int
    /// When the first and the last of them happened (seconds since the epoch).
    public var from: Double
    public var to: Double

    public init(count: Int, from: Double, to: Double) {
        self.count = count
        self.from = from
        self.to = to
    }
}

/// `feature.state`: a feature's state, or the reason it fails, changed.
public struct FeatureStateEvent: ControlEventData {
    public static let kind = EventKind.featureState
    /// `cloudConnection` or `itemSync`.
    public var feature: String
    public var state: State
    /// The stable code (`site.unreachable`, …) when it failed.
    public var error: String?
    /// One sentence with the fix.
    public var message: String?
    public var retryInSeconds: Int?

    public init(feature: String, state: State, error: String? = nil, message: String? = nil, retryInSeconds: Int? = nil)
    {
        self.feature = feature
        self.state = state
        self.error = error
        self.message = message
        self.retryInSeconds = retryInSeconds
    }

    public struct State: RawRepresentable, Codable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let ok = Self(rawValue: "ok")
        public static let failed = Self(rawValue: "failed")
    }
}
