/// `status.get`'s `audit`: the upload of access events to each site (docs/site-api.md §4.5).
public struct AuditStatus: Codable, Sendable, Hashable {
    /// `[site] audit_upload`.
    public var enabled: Bool
    /// Events waiting, over every site.
    public var backlog: Int
    public var sites: [AuditSiteStatus]

    public init(enabled: Bool, backlog: Int, sites: [AuditSiteStatus]) {
        self.enabled = enabled
        self.backlog = backlog
        self.sites = sites
    }
}

/// One credential's upload, named by its site (credential ids are for admins).
public struct AuditSiteStatus: Codable, Sendable, Hashable {
    public enum State: String, Codable, Sendable, Hashable {
        /// Nothing waiting, or the next batch on its way.
        case current
        /// The last attempt failed; `error` says why, `retryInSeconds` when it tries again.
        case failing
        /// The site has no events route (§4.5): asked again hourly.
        case unsupported
    }

    public var site: String
    public var state: State
    /// Events of this credential not yet acknowledged by the site, as of `countedAt`.
    public var backlog: Int
    /// The journal sequence up to which the site has acknowledged.
    public var through: Int64
    public var error: String?
    public var retryInSeconds: Int?
    /// When a batch was last acknowledged (seconds since the epoch).
    public var lastUploadAt: Double?

    public init(
        site: String, state: State, backlog: Int, through: Int64, error: String? = nil,
        retryInSeconds: Int? = nil, lastUploadAt: Double? = nil
    ) {
        self.site = site
        self.state = state
        self.backlog = backlog
        self.through = through
        self.error = error
        self.retryInSeconds = retryInSeconds
        self.lastUploadAt = lastUploadAt
    }
}
