/// `status.get`'s `mqtt`: the fleet bridge to an MQTT broker (docs/fleet.md).
public struct MQTTStatus: Codable, Sendable, Hashable {
    public enum State: String, Codable, Sendable, Hashable {
        /// Trying to reach the broker (at start, or after the link went).
        case connecting
        /// Connected; events go out as they are journalled.
        case connected
        /// The broker refused us (credentials, client id) or the link keeps failing: `error` says why.
        case failing
    }

    public var state: State
    /// `host:port`, with `mqtts://` or `mqtt://`.
    public var broker: String
    /// The `<prefix>/<device>` every topic starts with.
    public var topic: String
    /// The journal sequence up to which the broker has acknowledged every event.
    public var through: Int64
    /// Events journalled after `through`: not yet acknowledged.
    public var backlog: Int64
    public var error: String?
    /// Messages on the command topic dropped because 64 already waited in accessd (a flood):
    /// absent until one is.
    public var droppedCommands: Int?
    /// When the broker last acknowledged an event (seconds since the epoch).
    public var lastAcknowledgedAt: Double?

    public init(
        state: State, broker: String, topic: String, through: Int64, backlog: Int64, error: String? = nil,
        lastAcknowledgedAt: Double? = nil
    ) {
        self.state = state
        self.broker = broker
        self.topic = topic
        self.through = through
        self.backlog = backlog
        self.error = error
        self.lastAcknowledgedAt = lastAcknowledgedAt
    }
}
