/// Which readers the credentials held can be presented to: what the auto-connect and
/// manual-access machines need to know of credentials, without any key material.
public struct CredentialAvailability: Hashable, Sendable {
    /// Sites for which an active (not suspended, not revoked) mobile credential is held.
    public var mobileSites: Set<SiteTag>
    /// Sites for which a synced Aperio credential is held.
    public var aperioSites: Set<SiteTag>

    public init(mobileSites: Set<SiteTag> = [], aperioSites: Set<SiteTag> = []) {
        self.mobileSites = mobileSites
        self.aperioSites = aperioSites
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
}
