import AccessJSON

/// The data of one kind of journal event (docs/protocol.md, "Events"), as a `Codable` type
/// shared by accessd, which emits it, and every consumer (accessctl, the metrics, the MQTT
/// bridge, the journal's fields), as gpsd's `gps_json.h` serves gpsd and its clients. The
/// kind travels with the type, so an event cannot be emitted under the wrong name.
public protocol ControlEventData: Codable, Sendable, Hashable {
    static var kind: EventKind { get }
    /// This data as the event of its kind.
    var event: ControlEvent { get }
}

/// One event, decoded by its kind: what a consumer switches over, exhaustively, so a new
/// kind is a compile error in every consumer that must say something about it.
public enum ControlEvent: Sendable, Hashable {
    case sdkState(SdkStateEvent)
    case readerUpdated(ReaderInfo)
    case readerUnavailable(ReaderUnavailableEvent)
    case readersScopeChanged(ReadersScopeChangedEvent)
    case accessStarted(AccessStartedEvent)
    case accessNextWindow(AccessNextWindowEvent)
    case accessCompleted(ExchangeAnswer)
    case secondFactorRequired(SecondFactorRequiredEvent)
    case secondFactorAnswered(SecondFactorAnsweredEvent)
    case credentialsChanged(CredentialsChangedEvent)
    case eventsLost(EventsLostEvent)
    case featureState(FeatureStateEvent)
    case radioRecovery(RadioRecoveryEvent)
    case readerHealth(ReaderHealthEvent)

    /// The event a journal entry or a notification carries; throws (`-32602`, naming the
    /// field) when its data is not of its kind's type, or the kind is not one.
    public init(kind: String, data: JSONValue) throws(RPCError) {
        guard let known = EventKind(rawValue: kind) else { throw .invalidParams("kind: no event kind \"\(kind)\"") }
        switch known {
        case .sdkState: self = .sdkState(try data.decode(SdkStateEvent.self))
        case .readerUpdated: self = .readerUpdated(try data.decode(ReaderInfo.self))
        case .readerUnavailable: self = .readerUnavailable(try data.decode(ReaderUnavailableEvent.self))
        case .readersScopeChanged: self = .readersScopeChanged(try data.decode(ReadersScopeChangedEvent.self))
        case .accessStarted: self = .accessStarted(try data.decode(AccessStartedEvent.self))
        case .accessNextWindow: self = .accessNextWindow(try data.decode(AccessNextWindowEvent.self))
        case .accessCompleted: self = .accessCompleted(try data.decode(ExchangeAnswer.self))
        case .secondFactorRequired: self = .secondFactorRequired(try data.decode(SecondFactorRequiredEvent.self))
        case .secondFactorAnswered: self = .secondFactorAnswered(try data.decode(SecondFactorAnsweredEvent.self))
        case .credentialsChanged: self = .credentialsChanged(try data.decode(CredentialsChangedEvent.self))
        case .eventsLost: self = .eventsLost(try data.decode(EventsLostEvent.self))
        case .featureState: self = .featureState(try data.decode(FeatureStateEvent.self))
        case .radioRecovery: self = .radioRecovery(try data.decode(RadioRecoveryEvent.self))
        case .readerHealth: self = .readerHealth(try data.decode(ReaderHealthEvent.self))
        }
    }

    /// An `event` notification as the socket sends it (`params: {seq, time, kind, data}`).
    public init(notification params: JSONValue) throws(RPCError) {
        guard let kind = params["kind"]?.string else { throw .invalidParams("kind: missing") }
        try self.init(kind: kind, data: params["data"] ?? .null)
    }

    /// The event a whole JSON-RPC message carries when it is an `event` notification; nil for
    /// any other message, and for an event whose data this client cannot read.
    public init?(eventNotification message: JSONValue) {
        guard message["method"] == .string(RPCRequest.eventMethod), let params = message["params"],
            let event = try? ControlEvent(notification: params)
        else { return nil }
        self = event
    }

    public var data: any ControlEventData {
        switch self {
        case .sdkState(let data): data
        case .readerUpdated(let data): data
        case .readerUnavailable(let data): data
        case .readersScopeChanged(let data): data
        case .accessStarted(let data): data
        case .accessNextWindow(let data): data
        case .accessCompleted(let data): data
        case .secondFactorRequired(let data): data
        case .secondFactorAnswered(let data): data
        case .credentialsChanged(let data): data
        case .eventsLost(let data): data
        case .featureState(let data): data
        case .radioRecovery(let data): data
        case .readerHealth(let data): data
        }
    }

    public var kind: EventKind { type(of: data).kind }

    /// The reader the event is about, whichever kind it is (`reader.updated` names it `id`,
    /// as `readers.list` does).
    public var reader: String? {
        switch self {
        case .readerUpdated(let info): info.id
        case .readerUnavailable(let event): event.reader
        case .readersScopeChanged(let event): event.reader
        case .accessStarted(let event): event.reader
        case .accessNextWindow(let event): event.reader
        case .accessCompleted(let answer): answer.reader
        case .secondFactorRequired(let event): event.reader
        case .secondFactorAnswered(let event): event.reader
        case .readerHealth(let event): event.reader
        case .sdkState, .credentialsChanged, .eventsLost, .featureState, .radioRecovery: nil
        }
    }

    /// The credential the event is about.
    public var credential: String? {
        switch self {
        case .accessStarted(let event): event.credential
        case .accessCompleted(let answer): answer.credential
        case .secondFactorRequired(let event): event.credential
        case .secondFactorAnswered(let event): event.credential
        case .credentialsChanged(let event): event.credential
        case .sdkState, .readerUpdated, .readerUnavailable, .readersScopeChanged, .accessNextWindow, .eventsLost,
            .featureState, .radioRecovery, .readerHealth:
            nil
        }
    }
}

extension ControlEventData {
    /// The data as JSON, as the journal keeps it and the socket sends it. Event types hold
    /// only strings, integers, booleans and finite numbers, so encoding cannot fail; `null`
    /// marks it if it ever did.
    public var json: JSONValue { (try? JSONValue(encoding: self)) ?? .null }
}

extension ReaderInfo: ControlEventData {
    public static let kind = EventKind.readerUpdated
    public var event: ControlEvent { .readerUpdated(self) }
}

extension ExchangeAnswer: ControlEventData {
    public static let kind = EventKind.accessCompleted
    public var event: ControlEvent { .accessCompleted(self) }
}

extension SdkStateEvent { public var event: ControlEvent { .sdkState(self) } }
extension ReaderUnavailableEvent { public var event: ControlEvent { .readerUnavailable(self) } }
extension ReadersScopeChangedEvent { public var event: ControlEvent { .readersScopeChanged(self) } }
extension AccessStartedEvent { public var event: ControlEvent { .accessStarted(self) } }
extension AccessNextWindowEvent { public var event: ControlEvent { .accessNextWindow(self) } }
extension SecondFactorRequiredEvent { public var event: ControlEvent { .secondFactorRequired(self) } }
extension SecondFactorAnsweredEvent { public var event: ControlEvent { .secondFactorAnswered(self) } }
extension CredentialsChangedEvent { public var event: ControlEvent { .credentialsChanged(self) } }
extension EventsLostEvent { public var event: ControlEvent { .eventsLost(self) } }
extension FeatureStateEvent { public var event: ControlEvent { .featureState(self) } }

extension EventKind {
    /// An event's data as an observer may see it, or nil when it may see all of it:
    /// credential ids are admin knowledge (`credentials.list` is admin-only), and observers
    /// saw them in `credentials.changed` (issue #17).
    public func redactedForObservers(_ data: JSONValue) -> JSONValue? {
        guard self == .credentialsChanged, let event = try? data.decode(CredentialsChangedEvent.self) else {
            return nil
        }
        return event.forObservers.json
    }
}
