import AccessJSON

// What the second-factor, credential and item methods answer (docs/protocol.md).

/// `secondFactor.list`: the prompts open now, oldest first.
public struct PromptsAnswer: Codable, Sendable, Hashable {
    public var prompts: [PromptInfo]
    public init(prompts: [PromptInfo]) { self.prompts = prompts }
}

/// An open second-factor prompt: what `secondFactor.required` said, and how long it has left.
public struct PromptInfo: Codable, Sendable, Hashable {
    public var request: String
    public var reader: String
    public var credential: String
    public var prompt: String
    public var attemptsLeft: Int
    public var secondsLeft: Int64
    public init(
        request: String, reader: String, credential: String, prompt: String, attemptsLeft: Int, secondsLeft: Int64
    ) {
        self.request = request
        self.reader = reader
        self.credential = credential
        self.prompt = prompt
        self.attemptsLeft = attemptsLeft
        self.secondsLeft = secondsLeft
    }
}

public struct CancelAnswer: Codable, Sendable, Hashable {
    public var request: String
    public var cancelled: Bool
    public init(request: String, cancelled: Bool) {
        self.request = request
        self.cancelled = cancelled
    }
}

public struct PinAnswer: Codable, Sendable, Hashable {
    public var request: String
    public var accepted: Bool
    public init(request: String, accepted: Bool) {
        self.request = request
        self.accepted = accepted
    }
}

public struct SecondFactorInfo: Codable, Sendable, Hashable {
    public var required: Bool
    public var pinSet: Bool
    public var lockedOut: Bool
    public var attemptsLeft: Int
    public init(required: Bool, pinSet: Bool, lockedOut: Bool, attemptsLeft: Int) {
        self.required = required
        self.pinSet = pinSet
        self.lockedOut = lockedOut
        self.attemptsLeft = attemptsLeft
    }
}

/// A credential as `credentials.list` and `.register` show it (never its keys).
public struct CredentialInfo: Codable, Sendable, Hashable {
    public var id: String
    public var site: String
    public var siteName: String
    public var siteURL: String
    public var cardholderName: String
    public var deviceName: String
    public var state: String
    public var secondFactor: SecondFactorInfo
    public var registeredAt: Double
    public var lastSyncAt: Double?
    public var itemCount: Int
    /// Where readers of several sites are in range, a higher priority's reader goes first.
    public var priority: Int
    /// The credential's public key as the site holds it (`KeyFingerprint`: `sha256//` and
    /// base64); absent when its key cannot be read.
    public var fingerprint: String?
    /// Why the credential's key cannot be used, when `state` is `keyUnavailable`.
    public var keyProblem: String?

    public init(
        id: String, site: String, siteName: String, siteURL: String, cardholderName: String, deviceName: String,
        state: String, secondFactor: SecondFactorInfo, registeredAt: Double, lastSyncAt: Double?, itemCount: Int,
        priority: Int = 0, fingerprint: String? = nil, keyProblem: String? = nil
    ) {
        self.keyProblem = keyProblem
        self.priority = priority
        self.fingerprint = fingerprint
        self.id = id
        self.site = site
        self.siteName = siteName
        self.siteURL = siteURL
        self.cardholderName = cardholderName
        self.deviceName = deviceName
        self.state = state
        self.secondFactor = secondFactor
        self.registeredAt = registeredAt
        self.lastSyncAt = lastSyncAt
        self.itemCount = itemCount
    }
}

public struct CredentialsAnswer: Codable, Sendable, Hashable {
    public var credentials: [CredentialInfo]
    public init(credentials: [CredentialInfo]) { self.credentials = credentials }
}

public struct DeleteAnswer: Codable, Sendable, Hashable {
    public var id: String
    public var deleted: Bool
    public var siteInformed: Bool
    public var siteError: String?
    public init(id: String, siteError: String?) {
        self.id = id
        self.deleted = true
        self.siteInformed = siteError == nil
        self.siteError = siteError
    }
}

/// One credential's part of a sync: counts, or the error that stopped it.
public struct CredentialSync: Codable, Sendable, Hashable {
    public var id: String
    public var state: String?
    public var added: Int?
    public var updated: Int?
    public var removed: Int?
    public var error: String?
    public var message: String?
    public init(
        id: String, state: String? = nil, added: Int? = nil, updated: Int? = nil, removed: Int? = nil,
        error: String? = nil, message: String? = nil
    ) {
        self.id = id
        self.state = state
        self.added = added
        self.updated = updated
        self.removed = removed
        self.error = error
        self.message = message
    }
}

public struct SyncAnswer: Codable, Sendable, Hashable {
    public var credentials: [CredentialSync]
    public var nextSyncInSeconds: Int64
    public init(credentials: [CredentialSync], nextSyncInSeconds: Int64) {
        self.credentials = credentials
        self.nextSyncInSeconds = nextSyncInSeconds
    }
}

/// An item without its secrets; `data` is what the site gave, as it gave it.
public struct ItemInfo: Codable, Sendable, Hashable {
    public var id: String
    public var credential: String
    public var type: String
    public var name: String
    public var state: String
    public var site: String?
    public var data: JSONValue?
    /// The validity window (Unix seconds) and whether now is within it.
    public var validFrom: Double?
    public var validUntil: Double?
    public var valid: Bool
    public init(
        id: String, credential: String, type: String, name: String, state: String, site: String?, data: JSONValue?,
        validFrom: Double? = nil, validUntil: Double? = nil, valid: Bool = true
    ) {
        self.validFrom = validFrom
        self.validUntil = validUntil
        self.valid = valid
        self.id = id
        self.credential = credential
        self.type = type
        self.name = name
        self.state = state
        self.site = site
        self.data = data
    }
}

public struct ItemsAnswer: Codable, Sendable, Hashable {
    public var items: [ItemInfo]
    public init(items: [ItemInfo]) { self.items = items }
}
