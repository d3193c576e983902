import AccessJSON
import ControlSocket

/// The retained reader topics beside the event stream (docs/fleet.md): `readers/<id>` with the reader's attributes (and `available`), at most once per
/// `readerInterval` per reader, the newest winning; `readers/<id>/access` with the last
/// exchange there; `readers/<id>/health` with its newest health record; and Home Assistant's discovery configs when asked for. Fed the same
/// journal events as the stream, in order, so a replay after a reconnect leaves the newest.
struct MQTTRetainedTopics: Sendable {
    static let readerInterval: Duration = .seconds(5)

    let topic: String
    let discovery: HomeAssistantDiscovery?
    private var readers: [String: JSONValue] = [:]
    private var lastPublished: [String: ContinuousClock.Instant] = [:]
    private var waiting: Set<String> = []
    /// Readers whose discovery config went out on this connection.
    private var announced: Set<String> = []

    init(topic: String, discovery: HomeAssistantDiscovery?) {
        self.topic = topic
        self.discovery = discovery
    }

    /// A retained message to publish: topic and payload.
    typealias Message = (topic: String, payload: JSONValue)

    /// At each connection: the discovery configs.
    mutating func connected() -> [Message] {
        announced = []
        return discovery?.deviceConfigs ?? []
    }

    /// The kinds `observe` does something with: the bridge decodes no other.
    static let observedKinds: Set<EventKind> = [.readerUpdated, .readerUnavailable, .accessCompleted, .readerHealth]

    /// One journal event (journalled at `time`, seconds since the epoch); what to publish now.
    mutating func observe(_ event: ControlEvent, time: Double, now: ContinuousClock.Instant) -> [Message] {
        switch event {
        case .readerHealth(let health):
            // Every record goes out (the core publishes one per interval at most): a site's
            // alert reads the newest, and `time` says how fresh it is.
            guard Self.isTopicLevel(health.reader), case .object(var record) = health.json else { return [] }
            record["time"] = .double(time)
            return [("\(topic)/readers/\(health.reader)/health", .object(record))]
        case .readerUpdated(let info):
            return reader(info.id, attributes: info.json, available: true, name: info.name, now: now)
        case .readerUnavailable(let gone):
            // The attributes last published, or a reader named by its id alone.
            let attributes = readers[gone.reader] ?? .object(["id": .string(gone.reader)])
            return reader(gone.reader, attributes: attributes, available: false, name: nil, now: now)
        case .accessCompleted(let answer):
            guard Self.isTopicLevel(answer.reader) else { return [] }
            let access = LastAccess(answer).json
            return announce(answer.reader, name: answer.readerName) + [
                ("\(topic)/readers/\(answer.reader)/access", access)
            ]
        default:
            return []
        }
    }

    private mutating func reader(
        _ id: String, attributes: JSONValue, available: Bool, name: String?,
        now: ContinuousClock.Instant
    ) -> [Message] {
        guard Self.isTopicLevel(id) else { return [] }
        var attributes = attributes
        if case .object(var members) = attributes {
            members["available"] = .bool(available)
            attributes = .object(members)
        }
        readers[id] = attributes
        waiting.insert(id)
        var messages = announce(id, name: name)
        messages += due(now: now).filter { $0.topic.hasSuffix("/\(id)") }
        return messages
    }

    /// `readers/<id>/access`: the last exchange at a reader (docs/fleet.md), from its
    /// `access.completed`; `result` is the decision, else the error, else the outcome.
    struct LastAccess: Encodable {
        var origin: String
        var outcome: String
        var decision: String?
        var error: String?
        var granted: Bool?
        var operation: String?
        var readerName: String?
        var result: String

        init(_ answer: ExchangeAnswer) {
            origin = answer.origin
            outcome = answer.outcome
            decision = answer.decision
            error = answer.error
            granted = answer.granted
            operation = answer.operation
            readerName = answer.readerName
            result = answer.decision ?? answer.error ?? answer.outcome
        }

        var json: JSONValue { (try? JSONValue(encoding: self)) ?? .null }
    }

    /// Readers whose newest attributes waited for their interval and may go now.
    mutating func due(now: ContinuousClock.Instant) -> [Message] {
        var messages: [Message] = []
        for id in waiting.sorted() {
            if let last = lastPublished[id], now - last < Self.readerInterval { continue }
            guard let attributes = readers[id] else { continue }
            waiting.remove(id)
            lastPublished[id] = now
            messages.append(("\(topic)/readers/\(id)", attributes))
        }
        return messages
    }

    private mutating func announce(_ id: String, name: String?) -> [Message] {
        guard let discovery, !announced.contains(id) else { return [] }
        announced.insert(id)
        return [discovery.readerConfig(id: id, name: name)]
    }

    /// A reader id as it appears in a topic: 8 hex digits, never a wildcard or a slash.
    private static func isTopicLevel(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 16 && id.unicodeScalars.allSatisfy { $0.properties.isASCIIHexDigit }
    }
}
