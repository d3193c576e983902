/// What the control socket's methods take (docs/protocol.md, each method's heading).

/// `scanning.set`, `automaticAccess.set`.
public struct SwitchParams: Codable, Sendable, Hashable {
    public var enabled: Bool
    public init(enabled: Bool) { self.enabled = enabled }
}

/// `log.setLevel` (and its answer).
public struct LogLevelParams: Codable, Sendable, Hashable {
    public var level: String
    public init(level: String) { self.level = level }
}

/// `events.subscribe`: replay from after `since`, or from the first event at or after
/// `sinceTime` (seconds since the epoch), only `kinds` (all when absent).
public struct SubscribeParams: Codable, Sendable, Hashable {
    public var since: Int64?
    public var sinceTime: Double?
    public var kinds: [String]?
    public init(since: Int64? = nil, sinceTime: Double? = nil, kinds: [String]? = nil) {
        self.since = since
        self.sinceTime = sinceTime
        self.kinds = kinds
    }
}

/// `access.request`, `actions.list`: a reader id (up to eight hex digits).
public struct ReaderParams: Codable, Sendable, Hashable {
    public var reader: String
    /// The credential to present (its id, or a unique prefix as `accessctl credentials` shows);
    /// absent: the one held for the reader's site.
    public var credential: String?
    public init(reader: String, credential: String? = nil) {
        self.reader = reader
        self.credential = credential
    }
}

/// `actions.perform`.
public struct ActionParams: Codable, Sendable, Hashable {
    public var reader: String
    public var action: Int
    public init(reader: String, action: Int) {
        self.reader = reader
        self.action = action
    }
}

/// `secondFactor.respond`.
public struct PinParams: Codable, Sendable, Hashable {
    public var request: String
    public var pin: String
    public init(request: String, pin: String) {
        self.request = request
        self.pin = pin
    }
}

/// `credentials.register`: an invitation `url`, or a `host` and a `code`.
public struct RegisterParams: Codable, Sendable, Hashable {
    public var url: String?
    public var host: String?
    public var code: String?
    public var pin: String?
    public var deviceName: String?
    /// Replace the credential already held for that site (one per site otherwise).
    public var replace: Bool?
    public init(
        url: String? = nil, host: String? = nil, code: String? = nil, pin: String? = nil, deviceName: String? = nil,
        replace: Bool? = nil
    ) {
        self.replace = replace
        self.url = url
        self.host = host
        self.code = code
        self.pin = pin
        self.deviceName = deviceName
    }
}

/// `credentials.delete {id, option?}`: `option` is the SDK's `DeleteOption`.
public struct DeleteParams: Codable, Sendable, Hashable {
    public var id: String
    public var option: DeleteOption?
    public init(id: String, option: DeleteOption? = nil) {
        self.id = id
        self.option = option
    }
}

/// The SDK's `DeleteOption`: whether a deletion needs the site.
public enum DeleteOption: String, Codable, Sendable, CaseIterable {
    /// Delete at the site and here; refuse (delete nothing) if the site cannot be told.
    case `default`
    /// Delete at the site and here; delete here even if the site cannot be told.
    case allowOffline
    /// Delete here only, without contacting the site (it keeps the credential: not recommended).
    case offlineOnly
}

/// `secondFactor.cancel {request}`: a prompt's request id.
public struct RequestParams: Codable, Sendable, Hashable {
    public var request: String
    public init(request: String) { self.request = request }
}

/// `credentials.unlock {id}`: a credential id or a unique prefix.
/// `credentials.setPriority {id, priority}`.
public struct PriorityParams: Codable, Sendable, Hashable {
    public var id: String
    public var priority: Int
    public init(id: String, priority: Int) {
        self.id = id
        self.priority = priority
    }
}

public struct CredentialIDParams: Codable, Sendable, Hashable {
    public var id: String
    public init(id: String) { self.id = id }
}

/// `credentials.setPin {id, oldPin, newPin}`.
public struct SetPinParams: Codable, Sendable, Hashable {
    public var id: String
    public var oldPin: String
    public var newPin: String
    public init(id: String, oldPin: String, newPin: String) {
        self.id = id
        self.oldPin = oldPin
        self.newPin = newPin
    }
}
