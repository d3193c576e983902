/// The kinds of journal events (docs/protocol.md "Events"): what `events.subscribe {kinds}`
/// filters on. One list, shared by accessd (which refuses a kind not in it: a typo would
/// otherwise match nothing, silently) and `accessctl` (which completes them).
public enum EventKind: String, CaseIterable, Sendable {
    case sdkState = "sdk.state"
    case readerUpdated = "reader.updated"
    case readerUnavailable = "reader.unavailable"
    case readersScopeChanged = "readers.scopeChanged"
    case accessStarted = "access.started"
    case accessCompleted = "access.completed"
    case accessNextWindow = "access.nextWindow"
    case secondFactorRequired = "secondFactor.required"
    case secondFactorAnswered = "secondFactor.answered"
    case credentialsChanged = "credentials.changed"
    case eventsLost = "events.lost"
    case featureState = "feature.state"
    case radioRecovery = "radio.recovery"
    case readerHealth = "reader.health"

    /// The kinds named that are not kinds, for the refusal.
    public static func unknown(among names: [String]) -> [String] {
        names.filter { EventKind(rawValue: $0) == nil }
    }

    public static var list: String { allCases.map(\.rawValue).joined(separator: ", ") }
}
