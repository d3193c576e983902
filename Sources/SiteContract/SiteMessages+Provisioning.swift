import AccessCore
import Crypto

// §7 reader provisioning: what a reader controller gets from its site, page by page.
// Text on the wire as everywhere in this API; `ProvisioningPage.validated()` turns a page
// into the core's types or says which field is wrong.

/// §7 `GET /v1/readers/provisioning?cursor=<cursor>&wait=<seconds>`.
public struct ProvisioningPage: Codable, Sendable, Equatable {
    public var site: ProvisionedSite
    /// Opaque: the next call's `cursor`.
    public var cursor: String
    /// Credentials added or changed since the cursor (a state change included).
    public var credentials: [ProvisionedCredential]
    /// Aperio lock credentials added or changed since the cursor.
    public var aperio: [ProvisionedAperio]
    public var removed: ProvisioningRemovals
    /// The site cut the answer: call again at once with the new cursor.
    public var more: Bool
    /// Version 3 (reader protocol §1.1): the calling controller's current certificates, base64,
    /// in every page; absent from a site that issues none.
    public var certificates: [String]?

    public init(
        site: ProvisionedSite, cursor: String, credentials: [ProvisionedCredential], aperio: [ProvisionedAperio],
        removed: ProvisioningRemovals, more: Bool, certificates: [String]? = nil
    ) {
        self.site = site
        self.cursor = cursor
        self.credentials = credentials
        self.aperio = aperio
        self.removed = removed
        self.more = more
        self.certificates = certificates
    }
}

/// The site as a reader needs it: its private signing key included only where the site
/// allows versions 1-2 of the reader protocol, in which a reader signs for the site (reader
/// protocol §1); in version 3 a reader signs with its own key under a certificate (§1.1).
public struct ProvisionedSite: Codable, Sendable, Equatable {
    public var name: String
    /// 8 hex digits (either case).
    public var tag: String
    /// Base64 X9.63 P-256 public key.
    public var publicKey: String
    /// Base64 of the 32-byte P-256 private scalar, only from a site that allows reader protocol
    /// versions 1-2. A secret: a reader keeps it like its own key.
    public var signingKey: String?

    public init(name: String, tag: String, publicKey: String, signingKey: String? = nil) {
        self.name = name
        self.tag = tag
        self.publicKey = publicKey
        self.signingKey = signingKey
    }
}

public struct ProvisionedCredential: Codable, Sendable, Equatable {
    public var id: String
    public var publicKey: String
    public var secondFactorKey: String?
    public var state: CredentialState

    public init(id: String, publicKey: String, secondFactorKey: String?, state: CredentialState) {
        self.id = id
        self.publicKey = publicKey
        self.secondFactorKey = secondFactorKey
        self.state = state
    }
}

public struct ProvisionedAperio: Codable, Sendable, Equatable {
    /// The item's id (site API §4.2).
    public var id: String
    /// The credential the item was pushed to: the item is usable only while that is active.
    public var credential: String
    public var state: CredentialState
    /// 8 bytes, hex.
    public var identifier: String
    /// 32 bytes, base64: the HMAC key shared with the lock.
    public var key: String
    /// The site tag of the locks that take it (8 hex digits; absent: the page's site).
    public var siteTag: String?
    /// The item's validity window (Unix seconds, either end optional), as in item sync (§4.2).
    public var validFrom: Int64?
    public var validUntil: Int64?

    public init(
        id: String, credential: String, state: CredentialState, identifier: String, key: String,
        siteTag: String? = nil, validFrom: Int64? = nil, validUntil: Int64? = nil
    ) {
        self.id = id
        self.credential = credential
        self.state = state
        self.identifier = identifier
        self.key = key
        self.siteTag = siteTag
        self.validFrom = validFrom
        self.validUntil = validUntil
    }
}

public struct ProvisioningRemovals: Codable, Sendable, Equatable {
    public var credentials: [String]
    public var aperio: [String]

    public init(credentials: [String] = [], aperio: [String] = []) {
        self.credentials = credentials
        self.aperio = aperio
    }
}

/// A page in the core's types.
public struct ValidatedProvisioningPage: Sendable {
    public struct Site: Sendable {
        public var name: String
        public var tag: SiteTag
        public var publicKey: P256.Signing.PublicKey
        /// Only from a site that allows versions 1-2.
        public var signingKey: P256.Signing.PrivateKey?
    }

    public struct Credential: Sendable {
        public var id: CredentialID
        public var publicKey: P256.Signing.PublicKey
        public var secondFactorKey: P256.Signing.PublicKey?
        public var state: CredentialState
    }

    public struct Aperio: Sendable {
        public var id: String
        public var credential: CredentialID
        public var state: CredentialState
        public var secret: AperioSecret
        /// The locks that take it: the page's site unless the record names another.
        public var siteTag: SiteTag
        public var validFrom: Int64?
        public var validUntil: Int64?

        /// Whether `now` (Unix seconds) is within the validity window.
        public func isValid(at now: Int64) -> Bool {
            ValidityWindow(from: validFrom.map(Double.init), until: validUntil.map(Double.init)).contains(Double(now))
        }
    }

    public var site: Site
    public var cursor: String
    public var credentials: [Credential]
    public var aperio: [Aperio]
    public var removedCredentials: [CredentialID]
    public var removedAperio: [String]
    public var more: Bool
    /// The controller's certificates: each of this site, signed by its key.
    public var certificates: [ControllerCertificate]
}

/// Why a provisioning page was refused: the field, in words.
public struct ProvisioningPageError: Error, Sendable, CustomStringConvertible {
    public var description: String
}

extension ProvisioningPage {
    /// At most this many records (changed and removed together) in one page.
    public static let maximumRecords = 500
    /// At most this many certificates: 32 readers each, 1,024 readers a controller.
    public static let maximumCertificates = 32

    /// The page in the core's types; refuses the whole page on one bad field, so a reader
    /// never applies half a page and moves its cursor past the rest.
    public func validated() throws(ProvisioningPageError) -> ValidatedProvisioningPage {
        func fail(_ text: String) -> ProvisioningPageError { ProvisioningPageError(description: text) }
        guard credentials.count + aperio.count + removed.credentials.count + removed.aperio.count <= Self.maximumRecords
        else { throw fail("more than \(Self.maximumRecords) records in one page") }
        guard !cursor.isEmpty, cursor.utf8.count <= 256 else { throw fail("cursor must be 1 to 256 bytes") }
        guard let tag = SiteText.siteTag(site.tag) else { throw fail("site.tag must be 8 hex digits") }
        guard let publicKey = SiteText.publicKey(site.publicKey) else {
            throw fail("site.publicKey must be a base64 X9.63 P-256 public key")
        }
        var signingKey: P256.Signing.PrivateKey?
        if let text = site.signingKey {
            guard let scalar = Base64.decode(text), scalar.count == 32,
                let key = try? P256.Signing.PrivateKey(rawRepresentation: scalar)
            else { throw fail("site.signingKey must be a base64 32-byte P-256 private key") }
            guard publicKey.x963Representation == key.publicKey.x963Representation
            else { throw fail("site.publicKey is not the public half of site.signingKey") }
            signingKey = key
        }
        var validCredentials: [ValidatedProvisioningPage.Credential] = []
        for (index, record) in credentials.enumerated() {
            guard let id = CredentialID(record.id) else {
                throw fail("credentials[\(index)].id is not a credential id")
            }
            guard let key = SiteText.publicKey(record.publicKey) else {
                throw fail("credentials[\(index)].publicKey must be a base64 X9.63 P-256 public key")
            }
            var secondFactor: P256.Signing.PublicKey?
            if let text = record.secondFactorKey {
                guard let parsed = SiteText.publicKey(text) else {
                    throw fail("credentials[\(index)].secondFactorKey must be a base64 X9.63 P-256 public key")
                }
                secondFactor = parsed
            }
            validCredentials.append(.init(id: id, publicKey: key, secondFactorKey: secondFactor, state: record.state))
        }
        var validAperio: [ValidatedProvisioningPage.Aperio] = []
        for (index, record) in aperio.enumerated() {
            guard !record.id.isEmpty, record.id.utf8.count <= 128 else {
                throw fail("aperio[\(index)].id must be 1 to 128 bytes")
            }
            guard let owner = CredentialID(record.credential) else {
                throw fail("aperio[\(index)].credential is not a credential id")
            }
            guard let secret = AperioFields(identifier: record.identifier, key: record.key).secret else {
                throw fail("aperio[\(index)] needs identifier (8 bytes hex) and key (32 bytes base64)")
            }
            var itemTag = tag
            if let text = record.siteTag {
                guard let parsed = SiteText.siteTag(text) else {
                    throw fail("aperio[\(index)].siteTag must be 8 hex digits")
                }
                itemTag = parsed
            }
            if let from = record.validFrom, let until = record.validUntil, until <= from {
                throw fail("aperio[\(index)].validUntil must be after validFrom")
            }
            validAperio.append(
                .init(
                    id: record.id, credential: owner, state: record.state, secret: secret, siteTag: itemTag,
                    validFrom: record.validFrom, validUntil: record.validUntil))
        }
        var removedCredentials: [CredentialID] = []
        for (index, text) in removed.credentials.enumerated() {
            guard let id = CredentialID(text) else {
                throw fail("removed.credentials[\(index)] is not a credential id")
            }
            removedCredentials.append(id)
        }
        let validCertificates = try Self.certificates(certificates ?? [], tag: tag, siteKey: publicKey)
        return ValidatedProvisioningPage(
            site: .init(name: site.name, tag: tag, publicKey: publicKey, signingKey: signingKey), cursor: cursor,
            credentials: validCredentials,
            aperio: validAperio, removedCredentials: removedCredentials, removedAperio: removed.aperio, more: more,
            certificates: validCertificates)
    }

    private static func certificates(
        _ texts: [String], tag: SiteTag, siteKey: P256.Signing.PublicKey
    ) throws(ProvisioningPageError) -> [ControllerCertificate] {
        guard texts.count <= maximumCertificates else {
            throw ProvisioningPageError(description: "more than \(maximumCertificates) certificates in one page")
        }
        var valid: [ControllerCertificate] = []
        for (index, text) in texts.enumerated() {
            guard let bytes = Base64.decode(text), bytes.count <= 512 else {
                throw ProvisioningPageError(description: "certificates[\(index)] must be base64 of at most 512 bytes")
            }
            let certificate: ControllerCertificate
            do {
                certificate = try ControllerCertificate(decoding: bytes)
            } catch {
                throw ProvisioningPageError(description: "certificates[\(index)]: \(error)")
            }
            // Of this site and signed by its key: the checks a holder makes that do not
            // depend on the reader or the time.
            switch certificate.refusal(
                siteTag: tag, siteKeys: [siteKey], reader: certificate.readers[0], at: Double(certificate.validFrom))
            {
            case nil: break
            case .otherSite(let other)?:
                throw ProvisioningPageError(description: "certificates[\(index)] is of site \(other)")
            default:
                throw ProvisioningPageError(description: "certificates[\(index)] is not signed by the site key")
            }
            valid.append(certificate)
        }
        return valid
    }
}
