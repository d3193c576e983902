/// Every method of the control socket with the role it needs: one table that `accessd`
/// dispatches on and `accessctl` calls by, and that docs/protocol.md's headings are checked
/// against (ControlContractTests). The wire names are stable (docs/protocol.md, versioning).
public enum ControlMethod: String, CaseIterable, Sendable {
    case statusGet = "status.get"
    case readersList = "readers.list"
    case eventsSubscribe = "events.subscribe"
    case eventsUnsubscribe = "events.unsubscribe"
    case scanningSet = "scanning.set"
    case automaticAccessSet = "automaticAccess.set"
    case logSetLevel = "log.setLevel"
    case accessRequest = "access.request"
    case actionsList = "actions.list"
    case actionsPerform = "actions.perform"
    case secondFactorRespond = "secondFactor.respond"
    case credentialsRegister = "credentials.register"
    case credentialsList = "credentials.list"
    case credentialsDelete = "credentials.delete"
    case itemsSync = "items.sync"
    case itemsList = "items.list"

    /// The least role a client needs to call it.
    public var role: Role {
        switch self {
        case .statusGet, .readersList, .eventsSubscribe, .eventsUnsubscribe: .observer
        case .scanningSet, .automaticAccessSet, .logSetLevel, .accessRequest, .actionsList, .actionsPerform,
             .secondFactorRespond:
            .operator
        case .credentialsRegister, .credentialsList, .credentialsDelete, .itemsSync, .itemsList: .admin
        }
    }
}

/// The control protocol's version, greeted by `status.get` (docs/protocol.md, versioning).
public enum ControlProtocol {
    public static let version = 1
}
