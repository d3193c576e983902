import Crypto

/// What a reader knows and how it is set up (from its site and its operator), and what it
/// reports of each exchange.
extension ReaderSession {
    /// What the site told the reader about a mobile credential.
    public struct CredentialRecord: Sendable {
        public var id: CredentialID
        public var publicKey: P256.Signing.PublicKey
        public var secondFactorPublicKey: P256.Signing.PublicKey?
        public var state: CredentialState

        public init(
            id: CredentialID, publicKey: P256.Signing.PublicKey,
            secondFactorPublicKey: P256.Signing.PublicKey? = nil, state: CredentialState = .active
        ) {
            self.id = id
            self.publicKey = publicKey
            self.secondFactorPublicKey = secondFactorPublicKey
            self.state = state
        }
    }

    /// What the site told an Aperio-style lock about an Aperio credential.
    public struct AperioRecord: Sendable {
        public var secret: AperioSecret
        public var state: CredentialState

        public init(secret: AperioSecret, state: CredentialState = .active) {
            self.secret = secret
            self.state = state
        }
    }

    public struct Configuration: Sendable {
        public var readerID: ReaderID
        public var siteTag: SiteTag
        public var kind: ReaderKind
        /// The site's private key, for versions 1-2; nil at a site that allows only version 3
        /// (§1.1), where the reader answers a holder asking for less with `unsupportedVersion`.
        public var siteKey: P256.Signing.PrivateKey?
        public var policy: DecisionPolicy
        public var mode: AccessMode
        public var secondFactorRequired: Bool
        public var actions: [ReaderAction]
        /// Decision per action id; actions not listed are granted.
        public var actionOutcomes: [Int8: AccessDecision]
        public var credentials: [CredentialID: CredentialRecord]
        public var aperioCredentials: [[UInt8]: AperioRecord]
        public var timeouts: ProtocolTimeouts
        /// Version 3 (§1.1): the controller's own key and the site's certificate for it, used
        /// with a holder that asks for version 3; without it the reader signs with the site key.
        public var controller: ControllerIdentity?

        public init(
            readerID: ReaderID, siteTag: SiteTag, kind: ReaderKind = .gallagherStyle,
            siteKey: P256.Signing.PrivateKey?, policy: DecisionPolicy = .fromSite, mode: AccessMode = .access,
            secondFactorRequired: Bool = false, actions: [ReaderAction] = [],
            actionOutcomes: [Int8: AccessDecision] = [:], credentials: [CredentialRecord] = [],
            aperioCredentials: [AperioRecord] = [], timeouts: ProtocolTimeouts = ProtocolTimeouts(),
            controller: ControllerIdentity? = nil
        ) {
            self.readerID = readerID
            self.siteTag = siteTag
            self.kind = kind
            self.siteKey = siteKey
            self.policy = policy
            self.mode = mode
            self.secondFactorRequired = secondFactorRequired
            self.actions = actions
            self.actionOutcomes = actionOutcomes
            self.credentials = Dictionary(credentials.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
            self.aperioCredentials = Dictionary(
                aperioCredentials.map { ($0.secret.identifier, $0) },
                uniquingKeysWith: { _, last in last })
            self.timeouts = timeouts
            self.controller = controller
        }
    }

    /// What the reader did, for readersim's JSON lines.
    public struct Report: Hashable, Sendable {
        public enum Outcome: Hashable, Sendable {
            case decided(AccessResult)
            case actionsListed([ReaderAction])
            case actionPerformed(Int8, AccessResult)
            /// The reader refused with an error message (unknown or revoked credential, ...).
            case refused(ProtocolErrorCode)
            /// The exchange broke (malformed input, bad signature, timeout).
            case failed(ProtocolError)
            /// The central dropped the link before the exchange ended.
            case disconnected
        }

        /// The presented credential (mobile id in UUID form, or Aperio id in hex), once known.
        public var credential: String?
        public var operation: ExchangeOperation?
        public var outcome: Outcome
    }
}
