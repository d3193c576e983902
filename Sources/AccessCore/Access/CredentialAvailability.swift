/// Which readers the credentials held can be presented to: what the auto-connect and
/// manual-access machines need to know of credentials, without any key material.
public struct CredentialAvailability: Hashable, Sendable {
    /// Sites for which an active (not suspended, not revoked) mobile credential is held.
    public var mobileSites: Set<SiteTag>
    /// Sites for which a synced Aperio credential is held.
    public var aperioSites: Set<SiteTag>

    /// Sites whose credentials of a kind are all held but not presentable, and why (the
    /// state of one of them): a refusal then says "suspended", not "no credential".
    public var withheld: [Withheld: CredentialState]

    /// Per site, the priority of the credential presented there (absent: 0): where readers of
    /// several sites are in range, a higher priority's reader is opened first.
    public var priorities: [SiteTag: Int] = [:]

    public func priority(of site: SiteTag) -> Int { priorities[site] ?? 0 }

    /// Sites whose only credential is withheld by the offline limit (`[site] max_offline`).
    public var offlineSites: Set<SiteTag> = []

    public struct Withheld: Hashable, Sendable {
        public var kind: CredentialKind
        public var site: SiteTag
        public init(kind: CredentialKind, site: SiteTag) {
            self.kind = kind
            self.site = site
        }
    }

    public init(
        mobileSites: Set<SiteTag> = [], aperioSites: Set<SiteTag> = [], withheld: [Withheld: CredentialState] = [:]
    ) {
        self.mobileSites = mobileSites
        self.aperioSites = aperioSites
        self.withheld = withheld
    }

    public static let none = CredentialAvailability()

    /// Gallagher-style readers take the mobile credential; Aperio-style locks take the
    /// Aperio credential synced for that site, never the mobile credential.
    public func canPresent(to kind: ReaderKind, site: SiteTag) -> Bool {
        switch kind {
        case .gallagherStyle: mobileSites.contains(site)
        case .aperioStyle: aperioSites.contains(site)
        }
    }

    /// Why nothing can be presented to a reader of `kind` at `site`; nil when something can.
    public func refusal(to kind: ReaderKind, site: SiteTag) -> ManualRefusal? {
        guard !canPresent(to: kind, site: site) else { return nil }
        if kind == .gallagherStyle, offlineSites.contains(site) { return .credentialOffline(site) }
        let credentialKind: CredentialKind = kind == .gallagherStyle ? .mobile : .aperio
        if let state = withheld[Withheld(kind: credentialKind, site: site)], state != .active {
            return .credentialNotActive(site, state)
        }
        return .noCredentialForSite(site)
    }
}
