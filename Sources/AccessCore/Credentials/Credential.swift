import Crypto

/// The life of a credential as the site sees it. Only `active` credentials are presented.
public enum CredentialState: String, Sendable, CaseIterable, Codable {
    case active, suspended, revoked
}

/// What a credential opens: a mobile credential (Gallagher-style readers) or an Aperio
/// credential synced from the site (Aperio-style locks).
public enum CredentialKind: String, Sendable, CaseIterable {
    case mobile, aperio
}

/// A credential with its keys. Private material never leaves this value except into the
/// store's 0600 files; `description` shows none of it.
public struct Credential: Sendable, CustomStringConvertible {
    public var id: CredentialID
    public var siteTag: SiteTag
    public var cardholderName: String
    public var kind: CredentialKind
    public var state: CredentialState
    /// Verifies reader challenges and decisions: the site's public key.
    public var sitePublicKey: P256.Signing.PublicKey
    /// The credential's own key (mobile credentials).
    public var signingKey: P256.Signing.PrivateKey?
    /// The Aperio credential's identifier and key (Aperio credentials).
    public var aperio: AperioSecret?
    /// The second-factor key, sealed under the PIN; nil when the site requires none or no
    /// PIN has been set yet.
    public var sealedSecondFactor: SealedSecondFactorKey?
    /// Whether the site asked for a second factor for this credential.
    public var secondFactorEnabled: Bool

    public init(
        id: CredentialID, siteTag: SiteTag, cardholderName: String, kind: CredentialKind, state: CredentialState,
        sitePublicKey: P256.Signing.PublicKey, signingKey: P256.Signing.PrivateKey? = nil,
        aperio: AperioSecret? = nil, sealedSecondFactor: SealedSecondFactorKey? = nil,
        secondFactorEnabled: Bool = false
    ) {
        self.id = id
        self.siteTag = siteTag
        self.cardholderName = cardholderName
        self.kind = kind
        self.state = state
        self.sitePublicKey = sitePublicKey
        self.signingKey = signingKey
        self.aperio = aperio
        self.sealedSecondFactor = sealedSecondFactor
        self.secondFactorEnabled = secondFactorEnabled
    }

    /// Only an active credential with its key is ever presented.
    public var isUsable: Bool {
        guard state == .active else { return false }
        switch kind {
        case .mobile: return signingKey != nil
        case .aperio: return aperio != nil
        }
    }

    public var description: String {
        "Credential(\(id), site \(siteTag), \(kind.rawValue), \(state.rawValue), cardholder \(cardholderName))"
    }

    /// Summarises a set of credentials for the access machines.
    public static func availability(of credentials: [Credential]) -> CredentialAvailability {
        var result = CredentialAvailability()
        for credential in credentials where credential.isUsable {
            switch credential.kind {
            case .mobile: result.mobileSites.insert(credential.siteTag)
            case .aperio: result.aperioSites.insert(credential.siteTag)
            }
        }
        for credential in credentials where !credential.isUsable && credential.state != .active {
            let usable = credential.kind == .mobile ? result.mobileSites : result.aperioSites
            guard !usable.contains(credential.siteTag) else { continue }
            // Suspended before revoked: a suspended one may come back, which is what to tell.
            let key = CredentialAvailability.Withheld(kind: credential.kind, site: credential.siteTag)
            if result.withheld[key] != .suspended { result.withheld[key] = credential.state }
        }
        return result
    }
}

/// An Aperio credential's secret: an 8-byte identifier and a 32-byte HMAC key shared with
/// the site's locks.
public struct AperioSecret: Sendable, CustomStringConvertible {
    public var identifier: [UInt8]
    public var key: SymmetricKey

    public init?(identifier: [UInt8], key: [UInt8]) {
        guard identifier.count == 8, key.count == 32 else { return nil }
        self.identifier = identifier
        self.key = SymmetricKey(data: key)
    }

    public var description: String { "AperioSecret(\(identifier.hexString), key redacted)" }
}
