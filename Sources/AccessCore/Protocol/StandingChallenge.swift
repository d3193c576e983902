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

        public init(nonce: [UInt8]?, reassembler: FrameReassembler = FrameReassembler()) {
            self.nonce = nonce
            self.reassembler = reassembler
        }
    }

    public let readerID: ReaderID
    public let siteTag: SiteTag
    private let sitePublicKey: P256.Signing.PublicKey
    private var reassembler = FrameReassembler()
    /// The newest verified challenge's nonce and when it arrived.
    public private(set) var newest: (nonce: [UInt8], receivedAt: Timestamp)?

    public init(readerID: ReaderID, siteTag: SiteTag, sitePublicKey: P256.Signing.PublicKey) {
        self.readerID = readerID
        self.siteTag = siteTag
        self.sitePublicKey = sitePublicKey
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
            try challenge.verify(
                readerID: readerID, siteTag: siteTag, sitePublicKey: sitePublicKey, replayGuard: &replayGuard)
            newest = (challenge.nonce, now)
        case .error(let code):
            throw .remoteError(code)
        default:
            throw .unexpectedMessage(message.typeCode)
        }
    }

    /// For the exchange at the door: the newest challenge if it arrived within
    /// `StandingTimings.holderFreshness`, else none (the exchange waits for the next refresh).
    public func handover(at now: Timestamp) -> Handover {
        var nonce: [UInt8]?
        if let newest, now - newest.receivedAt < StandingTimings.holderFreshness { nonce = newest.nonce }
        return Handover(nonce: nonce, reassembler: reassembler)
    }
}

extension ProtocolMessage.Challenge {
    /// What a holder checks of every challenge before it answers or keeps one: the reader and
    /// site it expects, the site key's signature, and a nonce never seen (admitted to the
    /// replay guard only once verified, so garbage cannot fill the guard).
    func verify(
        readerID: ReaderID, siteTag: SiteTag, sitePublicKey: P256.Signing.PublicKey,
        replayGuard: inout ChallengeReplayGuard
    ) throws(ProtocolError) {
        guard self.readerID == readerID else { throw .wrongReader(expected: readerID, actual: self.readerID) }
        guard self.siteTag == siteTag else { throw .wrongSite }
        let content = SignedContent.challenge(readerID: readerID, siteTag: siteTag, nonce: nonce)
        guard ProtocolCrypto.verify(signature, over: content, with: sitePublicKey) else { throw .badSignature }
        guard replayGuard.admit(nonce) else { throw .replayedChallenge }
    }
}
