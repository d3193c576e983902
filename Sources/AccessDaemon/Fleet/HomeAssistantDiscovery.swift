import AccessJSON

/// Home Assistant's MQTT discovery (docs/fleet.md, "Home Assistant"): retained configs under
/// `<discovery_prefix>/<component>/<node>/<object>/config` that make the kiosk one device
/// with entities for its status, scanning, SDK states, the last access at each reader, and,
/// when commands are on, a button that opens the next door (`access.next`).
/// HA reads the bridge's own topics; nothing is published twice.
struct HomeAssistantDiscovery: Sendable {
    let prefix: String
    let device: String
    /// `<topic_prefix>/<device>`.
    let topic: String
    /// The command topic when commands are on: then an "Open next door" button.
    var commandTopic: String? = nil

    /// HA's node and object ids take `[a-zA-Z0-9_-]` only.
    static func identifier(_ text: String) -> String {
        String(
            text.unicodeScalars.map { scalar -> Character in
                scalar.properties.isASCIIHexDigit || ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
                    || scalar == "_" || scalar == "-" ? Character(scalar) : "_"
            })
    }

    private var node: String { Self.identifier(device) }

    private var deviceBlock: JSONValue {
        .object([
            "identifiers": .array([.string("accessd_\(node)")]), "name": .string("accessd \(device)"),
            "manufacturer": "accessd", "model": "mobile-access credential holder",
            "sw_version": .string(AccessDaemon.version),
        ])
    }

    /// Entities other than the status follow it: unavailable while accessd is offline.
    private var availability: [String: JSONValue] {
        [
            "availability_topic": .string("\(topic)/status"), "availability_template": "{{ value_json.status }}",
            "payload_available": "online", "payload_not_available": "offline",
        ]
    }

    private func config(
        _ component: String, _ object: String, _ fields: [String: JSONValue],
        available: Bool = true
    ) -> (topic: String, payload: JSONValue) {
        var members = fields
        members["unique_id"] = .string("accessd_\(node)_\(object)")
        members["object_id"] = .string("accessd_\(node)_\(object)")
        members["device"] = deviceBlock
        if available { members.merge(availability) { current, _ in current } }
        return ("\(prefix)/\(component)/\(node)/\(object)/config", .object(members))
    }

    /// The kiosk's own entities, published at each connection.
    var deviceConfigs: [(topic: String, payload: JSONValue)] {
        [
            config(
                "binary_sensor", "status",
                [
                    "name": "Status", "state_topic": .string("\(topic)/status"),
                    "value_template": "{{ value_json.status }}",
                    "payload_on": "online", "payload_off": "offline", "device_class": "connectivity",
                    "entity_category": "diagnostic",
                ], available: false),
            config(
                "binary_sensor", "scanning",
                [
                    "name": "Scanning", "state_topic": .string("\(topic)/state"),
                    "value_template": "{{ 'ON' if value_json.isScanning else 'OFF' }}",
                ]),
            config(
                "sensor", "states",
                [
                    "name": "SDK states", "state_topic": .string("\(topic)/state"),
                    "value_template": "{{ value_json.states | join(', ') if value_json.states else 'ok' }}",
                    "entity_category": "diagnostic",
                ]),
        ]
            + (commandTopic.map { commandTopic in
                [
                    config(
                        "button", "open_next",
                        [
                            "name": "Open next door", "command_topic": .string(commandTopic), "icon": "mdi:door-open",
                            "payload_press": .string(
                                #"{"jsonrpc":"2.0","id":"homeassistant","method":"access.next","params":{}}"#),
                        ])
                ]
            } ?? [])
    }

    /// A reader's "last access" entity, published the first time the reader is seen on a connection.
    func readerConfig(id: String, name: String?) -> (topic: String, payload: JSONValue) {
        config(
            "sensor", "reader_\(Self.identifier(id))",
            [
                "name": .string("\(name ?? id) last access"), "state_topic": .string("\(topic)/readers/\(id)/access"),
                "value_template": "{{ value_json.result }}",
                "json_attributes_topic": .string("\(topic)/readers/\(id)/access"),
                "icon": "mdi:door",
            ])
    }
}
