import Crypto

/// What a holder needs to accept a version 3 reader (docs/reader-protocol.md §1.1): the site
/// keys it follows from the one it registered with, the certificates the site withdrew, and
/// the time. Without it a holder speaks versions 1 and 2 only, and a certified challenge is a
/// message type it does not know.
public struct CertificateTrust: Sendable {
    public var chain: SiteKeyChain
    public var withdrawn: Set<UInt64>
    /// Unix seconds, from the shell's wall clock when the exchange began: certificates are
    /// valid between two seconds of the site's calendar, not of a monotonic clock.
    public var now: Double

    public init(chain: SiteKeyChain, withdrawn: Set<UInt64> = [], now: Double) {
        self.chain = chain
        self.withdrawn = withdrawn
        self.now = now
    }
}

extension ProtocolMessage.Challenge {
    /// What a holder checks of every challenge before it answers or keeps one: the reader and
    /// site it expects; in version 3 the certificate (§1.1); the signature, by the site key
    /// or the certified controller key; and a nonce never seen (admitted to the replay guard
    /// only once verified, so garbage cannot fill the guard). Returns the key that signs the
    /// reader's later messages in this exchange.
    public func verify(
        readerID: ReaderID, siteTag: SiteTag, sitePublicKey: P256.Signing.PublicKey,
        certificates: CertificateTrust?, replayGuard: inout ChallengeReplayGuard
    ) throws(ProtocolError) -> P256.Signing.PublicKey {
        guard self.readerID == readerID else { throw .wrongReader(expected: readerID, actual: self.readerID) }
        guard self.siteTag == siteTag else { throw .wrongSite }
        var signer = sitePublicKey
        if let certificate {
            guard let certificates else { throw .unknownMessageType(ProtocolMessage.TypeCode.certifiedChallenge) }
            if let refusal = certificate.refusal(
                siteTag: siteTag, siteKeys: certificates.chain.trustedKeys(at: certificates.now), reader: readerID,
                at: certificates.now, withdrawn: certificates.withdrawn)
            {
                throw .certificate(refusal)
            }
            signer = certificate.controllerKey
        }
        let content = SignedContent.challenge(
            readerID: readerID, siteTag: siteTag, nonce: nonce, certified: certificate != nil)
        guard ProtocolCrypto.verify(signature, over: content, with: signer) else { throw .badSignature }
        guard replayGuard.admit(nonce) else { throw .replayedChallenge }
        return signer
    }
}
