/// Why a manual request was refused before any exchange: the SDK's error (what a client
/// of the SDK sees) and the cause behind it, which the SDK's `forbidden` folds together but an
/// operator needs to act (no credential, a suspended one, a reader that offers nothing).
public enum ManualRefusal: Hashable, Sendable {
    /// No reader with that id is heard now.
    case readerNotHeard
    /// The reader does not advertise manual access (its flags).
    case manualAccessNotOffered
    /// The reader does not advertise actions (its flags).
    case actionsNotOffered
    /// The reader is on this kiosk's deny list (`ReaderScope`): nothing is sent to it.
    case readerDenied(ReaderScope.Layer)
    /// The reader's rule on this kiosk turns manual access off (`manual = false`).
    case manualAccessTurnedOff(ReaderScope.Layer)
    /// No credential is held for the reader's site (for its kind: mobile or Aperio).
    case noCredentialForSite(SiteTag)
    /// The credential held for the reader's site is suspended or revoked by the site.
    case credentialNotActive(SiteTag, CredentialState)
    /// The credential for the reader's site was not synced with its site for longer than
    /// `[site] max_offline`: withheld until a sync succeeds.
    case credentialOffline(SiteTag)
    /// This request is already under way.
    case requestInProgress
    /// Another exchange holds this reader.
    case readerBusy
    /// Every exchange slot of the adapter is taken.
    case noFreeSlot

    public var error: ReaderConnectionError {
        switch self {
        case .readerNotHeard: .readerUnavailable
        case .manualAccessNotOffered, .actionsNotOffered, .readerDenied, .manualAccessTurnedOff, .noCredentialForSite,
            .credentialNotActive, .credentialOffline:
            .forbidden
        case .requestInProgress, .readerBusy, .noFreeSlot: .transactionInProgress
        }
    }

    /// The stable name of the cause on the socket (`data.cause`, docs/protocol.md).
    public var cause: String {
        switch self {
        case .readerNotHeard: "readerNotHeard"
        case .manualAccessNotOffered: "manualAccessNotOffered"
        case .actionsNotOffered: "actionsNotOffered"
        case .readerDenied: "readerDenied"
        case .manualAccessTurnedOff: "manualAccessTurnedOff"
        case .noCredentialForSite: "noCredentialForSite"
        case .credentialNotActive(_, let state): state == .revoked ? "credentialRevoked" : "credentialSuspended"
        case .credentialOffline: "credentialOffline"
        case .requestInProgress: "requestInProgress"
        case .readerBusy: "readerBusy"
        case .noFreeSlot: "noFreeSlot"
        }
    }
}
