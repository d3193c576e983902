import AccessCore
import Crypto

/// What a reader controller keeps from §7 provisioning, and the rules for applying a page:
/// the newest record of each credential and Aperio item replaces the older one, a removal
/// drops it, and an Aperio item is only as good as the credential it was pushed to (a
/// suspended, revoked or removed owner makes it unusable too). Pure, so both a reader and a
/// test apply pages the same way.
public struct ReaderProvisioningState: Sendable {
    public private(set) var site: ValidatedProvisioningPage.Site?
    /// The next call's cursor; `0` before the first page.
    public private(set) var cursor = "0"
    public private(set) var credentials: [CredentialID: ValidatedProvisioningPage.Credential] = [:]
    public private(set) var aperio: [String: ValidatedProvisioningPage.Aperio] = [:]

    public init() {}

    /// Applies one page, in full; moves the cursor.
    public mutating func apply(_ page: ValidatedProvisioningPage) {
        site = page.site
        for credential in page.credentials { credentials[credential.id] = credential }
        for id in page.removedCredentials { credentials[id] = nil }
        for item in page.aperio { aperio[item.id] = item }
        for id in page.removedAperio { aperio[id] = nil }
        cursor = page.cursor
    }

    /// The records a reader session decides from.
    public var credentialRecords: [ReaderSession.CredentialRecord] {
        credentials.values.map {
            ReaderSession.CredentialRecord(
                id: $0.id, publicKey: $0.publicKey, secondFactorPublicKey: $0.secondFactorKey,
                state: $0.state)
        }
    }

    /// Aperio records with the owner's state applied: active only while both are.
    public var aperioRecords: [ReaderSession.AperioRecord] {
        aperio.values.map { item in
            let owner = credentials[item.credential]?.state ?? .revoked
            return ReaderSession.AperioRecord(secret: item.secret, state: owner == .active ? item.state : owner)
        }
    }
}
