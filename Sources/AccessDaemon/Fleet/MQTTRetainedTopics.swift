import AccessJSON

/// The retained reader topics beside the event stream (docs/fleet.md): `readers/<id>` with the reader's attributes (and `available`), at most once per
/// `readerInterval` per reader, the newest winning; `readers/<id>/access` with the last
/// exchange there; and Home Assistant's discovery configs when asked for. Fed the same
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

    /// One journal event; what to publish now.
    mutating func observe(kind: String, data: JSONValue, now: ContinuousClock.Instant) -> [Message] {
        switch kind {
        case "reader.updated", "reader.unavailable":
            guard let id = data["id"]?.string, Self.isTopicLevel(id) else { return [] }
            var attributes = kind == "reader.updated" ? data : (readers[id] ?? .object(["id": .string(id)]))
            if case var .object(members) = attributes {
                members["available"] = .bool(kind == "reader.updated")
                attributes = .object(members)
            }
            readers[id] = attributes
            waiting.insert(id)
            var messages = announce(id, name: data["name"]?.string)
            messages += due(now: now).filter { $0.topic.hasSuffix("/\(id)") }
            return messages
        case "access.completed":
            guard let id = data["reader"]?.string, Self.isTopicLevel(id) else { return [] }
            var access: [String: JSONValue] = [:]
            for key in ["origin", "outcome", "decision", "error", "granted", "operation", "readerName"] {
                if let value = data[key] { access[key] = value }
            }
            access["result"] = data["decision"] ?? data["error"] ?? data["outcome"] ?? "unknown"
            return announce(id, name: data["readerName"]?.string) + [("\(topic)/readers/\(id)/access", .object(access))]
        default:
            return []
        }
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
