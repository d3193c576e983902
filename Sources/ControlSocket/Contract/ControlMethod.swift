/// Every method of the control socket with the role it needs: one table that `accessd`
/// dispatches on and `accessctl` calls by, and that docs/protocol.md's headings are checked
/// against (ControlContractTests). The wire names are stable (docs/protocol.md, versioning).
public enum ControlMethod: String, CaseIterable, Sendable {
    case statusGet = "status.get"
    case readersList = "readers.list"
    case readersGetScope = "readers.getScope"
    case readersSetScope = "readers.setScope"
    case readersResetScope = "readers.resetScope"
    case readersProbe = "readers.probe"
    case eventsSubscribe = "events.subscribe"
    case eventsUnsubscribe = "events.unsubscribe"
    case scanningSet = "scanning.set"
    case automaticAccessSet = "automaticAccess.set"
    case logSetLevel = "log.setLevel"
    case accessRequest = "access.request"
    case accessNext = "access.next"
    case accessCancel = "access.cancel"
    case actionsList = "actions.list"
    case actionsPerform = "actions.perform"
    case secondFactorRespond = "secondFactor.respond"
    case secondFactorList = "secondFactor.list"
    case secondFactorCancel = "secondFactor.cancel"
    case credentialsRegister = "credentials.register"
    case credentialsList = "credentials.list"
    case credentialsDelete = "credentials.delete"
    case credentialsSetPin = "credentials.setPin"
    case credentialsUnlock = "credentials.unlock"
    case credentialsSetPriority = "credentials.setPriority"
    case itemsSync = "items.sync"
    case itemsList = "items.list"
    case diagnosticsCollect = "diagnostics.collect"

    /// Whether the client's events wait while this request is under way, so that its answer
    /// comes before the events it produced (`events.subscribe`'s answer before its replay).
    /// Not for the calls that wait on a reader or a site: the events of an exchange
    /// (`secondFactor.required` above all, which the caller answers before the exchange can
    /// end) flow while it runs, and a subscriber's events are not held up for a minute.
    public var holdsEventsUntilAnswered: Bool {
        switch self {
        case .accessRequest, .actionsList, .actionsPerform, .credentialsRegister, .credentialsDelete, .itemsSync,
            .readersProbe, .diagnosticsCollect:
            false
        default: true
        }
    }

    /// The least role a client needs to call it.
    public var role: Role {
        switch self {
        case .statusGet, .readersList, .readersGetScope, .readersProbe, .eventsSubscribe, .eventsUnsubscribe: .observer
        case .readersSetScope, .readersResetScope, .scanningSet, .automaticAccessSet, .logSetLevel, .accessRequest,
            .accessNext,
            .accessCancel, .actionsList, .actionsPerform,
            .secondFactorRespond, .secondFactorList, .secondFactorCancel:
            .operator
        case .credentialsRegister, .credentialsList, .credentialsDelete, .credentialsSetPin, .credentialsUnlock,
            .credentialsSetPriority, .itemsSync,
            .itemsList, .diagnosticsCollect:
            .admin
        }
    }
}

/// The control protocol's version, greeted by `status.get` (docs/protocol.md, versioning).
public enum ControlProtocol {
    public static let version = 1
}
