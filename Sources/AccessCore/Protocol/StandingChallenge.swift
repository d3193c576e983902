import Crypto

/// The holder's side of a held link before the door, in protocol version 2 (docs/reader-
/// protocol.md §6, "Standing challenges"): the reader sends a challenge as soon as the
/// holder subscribes and a fresh one every `StandingTimings.refresh` while the holder stays
/// silent. This takes them as they come, verifies each as `CredentialSession` would, and
/// keeps the newest; at the door the exchange starts from it (`handover`), so what is left
/// there is the response and the decision.
public struct StandingChallenge: Sendable {
    /// What the exchange at the door takes over: the newest challenge when it is still fresh
    /// enough to answer, and the fragments of one still arriving.
    public struct Handover: Sendable {
        public var nonce: [UInt8]?
        public var reassembler: FrameReassembler
        /// The key that signed the newest challenge: the site's, or in version 3 the
        /// certified controller's, which then signs the decision too.
        public var signer: P256.Signing.PublicKey?

        public init(
            nonce: [UInt8]?, reassembler: FrameReassembler = FrameReassembler(), signer: P256.Signing.PublicKey? = nil
        ) {
            self.nonce = nonce
            self.reassembler = reassembler
            self.signer = signer
        }
    }

    public let readerID: ReaderID
    public let siteTag: SiteTag
    private let sitePublicKey: P256.Signing.PublicKey
    private let certificates: CertificateTrust?
    private var reassembler = FrameReassembler()
    /// The newest verified challenge's nonce, when it arrived, and the key that signed it.
    public private(set) var newest: (nonce: [UInt8], receivedAt: Timestamp, signer: P256.Signing.PublicKey)?

    public init(
        readerID: ReaderID, siteTag: SiteTag, sitePublicKey: P256.Signing.PublicKey,
        certificates: CertificateTrust? = nil
    ) {
        self.readerID = readerID
        self.siteTag = siteTag
        self.sitePublicKey = sitePublicKey
        self.certificates = certificates
    }

    /// Takes one notified fragment. Throws when the reader sent anything but a valid
    /// challenge (an error, as its hold time ran out; a forged or replayed challenge): the
    /// holder then drops the link.
    public mutating func receive(
        _ fragment: [UInt8], at now: Timestamp,
        replayGuard: inout ChallengeReplayGuard
    ) throws(ProtocolError) {
        guard let bytes = try reassembler.feed(fragment) else { return }
        let message = try ProtocolMessage(decoding: bytes)
        switch message {
        case .challenge(let challenge):
            let signer = try challenge.verify(
                readerID: readerID, siteTag: siteTag, sitePublicKey: sitePublicKey, certificates: certificates,
                replayGuard: &replayGuard)
            newest = (challenge.nonce, now, signer)
        case .error(let code):
            throw .remoteError(code)
        default:
            throw .unexpectedMessage(message.typeCode)
        }
    }

    /// For the exchange at the door: the newest challenge if it arrived within
    /// `StandingTimings.holderFreshness`, else none (the exchange waits for the next refresh).
    public func handover(at now: Timestamp) -> Handover {
        guard let newest, now - newest.receivedAt < StandingTimings.holderFreshness else {
            return Handover(nonce: nil, reassembler: reassembler)
        }
        return Handover(nonce: newest.nonce, reassembler: reassembler, signer: newest.signer)
    }
}
