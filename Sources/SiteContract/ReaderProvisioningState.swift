import AccessCore
import Crypto

/// What a reader controller keeps from §7 provisioning, and the rules for applying a page
/// (docs/site-api.md §7.4): a page of another site is refused; the records first, then the
/// removals; the newest record of each credential and Aperio item replaces the older one, a
/// removal drops it; an Aperio item is only as good as the credential it was pushed to (a
/// suspended, revoked or removed owner makes it unusable too), is taken only by the locks of
/// its site tag, and only within its validity window. Pure, so both a reader and a test apply
/// pages the same way.
public struct ReaderProvisioningState: Sendable {
    public private(set) var site: ValidatedProvisioningPage.Site?
    /// The next call's cursor; `0` before the first page.
    public private(set) var cursor = "0"
    public private(set) var credentials: [CredentialID: ValidatedProvisioningPage.Credential] = [:]
    public private(set) var aperio: [String: ValidatedProvisioningPage.Aperio] = [:]
    /// The controller's certificates (version 3), as the last page listed them.
    public private(set) var certificates: [ControllerCertificate] = []

    public init() {}

    /// Applies one page, in full, and moves the cursor; refuses a page of another site (its
    /// tag or public key not the one stored): no site key rotation reaches readers yet (reader
    /// protocol §1.2), so a reader keeps one site until its store is cleared, and a page naming
    /// another is a mistake or an attack. A page with or without the site's private key is of
    /// the same site: a site may stop allowing versions 1-2, or start again.
    public mutating func apply(_ page: ValidatedProvisioningPage) throws(ProvisioningPageError) {
        if let site,
            site.tag != page.site.tag || site.publicKey.x963Representation != page.site.publicKey.x963Representation
        {
            throw ProvisioningPageError(
                description: "the page is of another site (tag \(page.site.tag), or another key) than the one stored "
                    + "(\(site.tag)): a reader keeps one site; clear its store to give it another")
        }
        site = page.site
        for credential in page.credentials { credentials[credential.id] = credential }
        for id in page.removedCredentials { credentials[id] = nil }
        for item in page.aperio { aperio[item.id] = item }
        for id in page.removedAperio { aperio[id] = nil }
        certificates = page.certificates
        cursor = page.cursor
    }

    /// The controller identity a reader signs version 3 exchanges with: its own key and the
    /// newest certificate naming the reader; nil when the site gave none (or for another key).
    public func controllerIdentity(key: P256.Signing.PrivateKey, reader: ReaderID) -> ControllerIdentity? {
        certificates.filter { $0.readers.contains(reader) }.max { $0.validUntil < $1.validUntil }
            .flatMap { ControllerIdentity(key: key, certificate: $0) }
    }

    /// The records a reader session decides from.
    public var credentialRecords: [ReaderSession.CredentialRecord] {
        credentials.values.map {
            ReaderSession.CredentialRecord(
                id: $0.id, publicKey: $0.publicKey, secondFactorPublicKey: $0.secondFactorKey,
                state: $0.state)
        }
    }

    /// The Aperio records a lock of this site decides from at `now` (Unix seconds): the items
    /// of its site tag, with the owner's state applied (active only while both are), and an item
    /// outside its validity window suspended (denied, as the holder does not present it then).
    public func aperioRecords(at now: Int64) -> [ReaderSession.AperioRecord] {
        aperio.values.compactMap { item in
            guard item.siteTag == site?.tag else { return nil }
            let owner = credentials[item.credential]?.state ?? .revoked
            var state = owner == .active ? item.state : owner
            if state == .active, !item.isValid(at: now) { state = .suspended }
            return ReaderSession.AperioRecord(secret: item.secret, state: state)
        }
    }
}
