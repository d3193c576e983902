import AccessCore
import AccessJSON

// The bodies of docs/site-api.md, one type per message, used by both ends: accessd's
// `SiteClient` and readersim's site. Keys and ids stay text here, as on the wire; the
// `Validated` helpers below turn them into the core's types in one place.

/// §3 `POST /v1/invitations/<code>/register`.
public struct RegistrationRequest: Codable, Sendable, Equatable {
    public var deviceName: String
    /// Base64 X9.63 P-256 public key.
    public var credentialKey: String
    public var secondFactorKey: String?

    public init(deviceName: String, credentialKey: String, secondFactorKey: String?) {
        self.deviceName = deviceName
        self.credentialKey = credentialKey
        self.secondFactorKey = secondFactorKey
    }
}

/// §3 the `201` answer to a registration.
public struct RegistrationAnswer: Codable, Sendable, Equatable {
    public var credential: CredentialStatusAnswer
    public var site: SiteDescription

    public init(credential: CredentialStatusAnswer, site: SiteDescription) {
        self.credential = credential
        self.site = site
    }
}

/// The site as registration describes it.
public struct SiteDescription: Codable, Sendable, Equatable {
    public var name: String
    /// 8 hex digits.
    public var tag: String
    /// Base64 X9.63 P-256 public key.
    public var publicKey: String

    public init(name: String, tag: String, publicKey: String) {
        self.name = name
        self.tag = tag
        self.publicKey = publicKey
    }
}

/// §4.1 `GET /v1/credentials/<id>`, and the credential inside a registration answer
/// (which adds the cardholder's name).
public struct CredentialStatusAnswer: Codable, Sendable, Equatable {
    public var id: String
    public var state: CredentialState
    public var cardholderName: String?
    public var secondFactor: Bool?

    public init(id: String, state: CredentialState, cardholderName: String? = nil, secondFactor: Bool?) {
        self.id = id
        self.state = state
        self.cardholderName = cardholderName
        self.secondFactor = secondFactor
    }
}

/// §4.2 `GET /v1/credentials/<id>/items?cursor=<cursor>`.
public struct ItemPageAnswer: Codable, Sendable, Equatable {
    public var cursor: String
    public var items: [SiteItem]
    public var removed: [String]
    /// Absent means false.
    public var more: Bool?
    /// Reader protocol §1.1: the serials (decimal) of every controller certificate the site has
    /// withdrawn and that has not yet expired, in every page; absent from a site that issues
    /// none. A holder replaces its list with each page's.
    public var withdrawnCertificates: [String]?

    public init(
        cursor: String, items: [SiteItem], removed: [String], more: Bool, withdrawnCertificates: [String]? = nil
    ) {
        self.cursor = cursor
        self.items = items
        self.removed = removed
        self.more = more
        self.withdrawnCertificates = withdrawnCertificates
    }
}

/// One item of a sync answer: what every item has, then what its type carries.
public struct SiteItem: Codable, Sendable, Equatable {
    public var id: String
    public var type: String
    public var name: String
    public var state: CredentialState
    public var content: SiteItemContent

    public init(id: String, type: String, name: String, state: CredentialState, content: SiteItemContent) {
        self.id = id
        self.type = type
        self.name = name
        self.state = state
        self.content = content
    }

    private enum CodingKeys: String, CodingKey { case id, type, name, state }

    // On the wire the content's fields sit beside the common ones, not under a key.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        type = try container.decode(String.self, forKey: .type)
        name = try container.decode(String.self, forKey: .name)
        state = try container.decode(CredentialState.self, forKey: .state)
        content = try SiteItemContent(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(type, forKey: .type)
        try container.encode(name, forKey: .name)
        try container.encode(state, forKey: .state)
        try content.encode(to: encoder)
    }
}

/// What an item's type carries: an Aperio lock credential and its locks' site tag, or a
/// free-form `data` object. readersim stores exactly this per item.
public struct SiteItemContent: Codable, Sendable, Equatable {
    /// Aperio items: 8 hex digits.
    public var siteTag: String?
    public var aperio: AperioFields?
    /// Other items: an object accessd keeps and lists as given.
    public var data: JSONValue?
    /// The validity window (Unix seconds), either end optional: outside it the item is kept
    /// and listed but not presented.
    public var validFrom: Int64?
    public var validUntil: Int64?

    public init(
        siteTag: String? = nil, aperio: AperioFields? = nil, data: JSONValue? = nil, validFrom: Int64? = nil,
        validUntil: Int64? = nil
    ) {
        self.siteTag = siteTag
        self.aperio = aperio
        self.data = data
        self.validFrom = validFrom
        self.validUntil = validUntil
    }
}

/// An Aperio lock credential as text: `identifier` 8 bytes hex, `key` 32 bytes base64.
public struct AperioFields: Codable, Sendable, Equatable {
    public var identifier: String
    public var key: String

    public init(identifier: String, key: String) {
        self.identifier = identifier
        self.key = key
    }
}

/// §2 every refusal: `{"error": {"code", "message"}}`; `auth.expired` adds `serverTime`.
public struct SiteErrorAnswer: Codable, Sendable, Equatable {
    public struct Body: Codable, Sendable, Equatable {
        public var code: String
        public var message: String?
        /// Unix seconds; only with `auth.expired`.
        public var serverTime: Int64?

        public init(code: String, message: String, serverTime: Int64? = nil) {
            self.code = code
            self.message = message
            self.serverTime = serverTime
        }
    }

    public var error: Body

    public init(code: String, message: String, serverTime: Int64? = nil) {
        error = Body(code: code, message: message, serverTime: serverTime)
    }
}

/// §4.4 `GET /v1/credentials/<id>/changes?since=<version>&wait=<seconds>`: the credential's
/// version (opaque), answered as soon as it differs from `since`, or after `wait` seconds.
public struct ChangesAnswer: Codable, Sendable, Equatable {
    public var version: String
    public init(version: String) { self.version = version }
}
