import Crypto

extension ControllerCertificate {
    /// How far a holder's clock may be from the site's before a certificate counts as not
    /// yet valid or expired: five minutes, as Kerberos allows. A kiosk keeps time with NTP;
    /// one that has lost it by more than this refuses version 3 readers (and says why) rather
    /// than accept a certificate whose end it cannot place.
    public static let clockTolerance: UInt32 = 300

    /// Checks the certificate for one exchange (docs/reader-protocol.md §1.1), in this order:
    /// the site (by tag), the site's signature under any of `siteKeys` (the registered key
    /// and the keys it handed over to, §1.2), the reader, the time, the withdrawal list.
    /// Returns nil when the controller key may speak for `reader` at `time`.
    public func refusal(
        siteTag expectedTag: SiteTag, siteKeys: [P256.Signing.PublicKey], reader: ReaderID, at time: Double,
        withdrawn: Set<UInt64> = []
    ) -> CertificateRefusal? {
        guard siteTag == expectedTag else { return .otherSite(siteTag) }
        guard siteKeys.contains(where: { ProtocolCrypto.verify(signature, over: signedContent, with: $0) }) else {
            return .badSignature
        }
        guard readers.contains(reader) else { return .readerNotNamed(reader) }
        if time + Double(Self.clockTolerance) < Double(validFrom) { return .notYetValid(validFrom) }
        if time - Double(Self.clockTolerance) >= Double(validUntil) { return .expired(validUntil) }
        guard !withdrawn.contains(serial) else { return .withdrawn(serial) }
        return nil
    }
}

/// Why a holder refuses a well-formed certificate (docs/reader-protocol.md §1.1, §7: each is
/// error `badSignature` on the link, and `badReaderSignature` on accessd's socket).
public enum CertificateRefusal: Error, Hashable, Sendable, CustomStringConvertible {
    case otherSite(SiteTag)
    case badSignature
    case readerNotNamed(ReaderID)
    case notYetValid(UInt32)
    case expired(UInt32)
    case withdrawn(UInt64)

    /// The reason's name (`ProtocolError.code` of `.certificate`): what a log or event would
    /// carry. The shell reports only `badReaderSignature` so far.
    public var name: String {
        switch self {
        case .otherSite: "certificateOtherSite"
        case .badSignature: "certificateBadSignature"
        case .readerNotNamed: "certificateReaderNotNamed"
        case .notYetValid: "certificateNotYetValid"
        case .expired: "certificateExpired"
        case .withdrawn: "certificateWithdrawn"
        }
    }

    public var description: String {
        switch self {
        case .otherSite(let tag): "the controller certificate is of site \(tag)"
        case .badSignature: "the controller certificate is not signed by the site"
        case .readerNotNamed(let reader): "the controller certificate does not name reader \(reader)"
        case .notYetValid(let from): "the controller certificate is valid only from \(from) (Unix seconds)"
        case .expired(let until): "the controller certificate expired at \(until) (Unix seconds)"
        case .withdrawn(let serial): "the controller certificate \(serial) was withdrawn by the site"
        }
    }
}
