/// Open the next door on the socket (`access.next`, `access.cancel`; docs/protocol.md).

/// `access.next`: seconds the window stays open (default `[access] open_next_expiry`, 1…60).
public struct OpenNextParams: Codable, Sendable, Hashable {
    public var expiry: Double?
    public init(expiry: Double? = nil) { self.expiry = expiry }
}

public struct OpenNextAnswer: Codable, Sendable, Hashable {
    public var expirySeconds: Int
    /// When the window closes unless a door opens first (seconds since the epoch).
    public var until: Double
    public init(expirySeconds: Int, until: Double) {
        self.expirySeconds = expirySeconds
        self.until = until
    }
}

public struct OpenNextCancelAnswer: Codable, Sendable, Hashable {
    /// Whether an open-next window was open.
    public var cancelled: Bool
    public init(cancelled: Bool) { self.cancelled = cancelled }
}

extension ControlCalls {
    public enum AccessNext: ControlCall {
        public typealias Params = OpenNextParams
        public typealias Answer = OpenNextAnswer
        public static let method = ControlMethod.accessNext
    }

    public enum AccessCancel: ControlCall {
        public typealias Params = NoParams
        public typealias Answer = OpenNextCancelAnswer
        public static let method = ControlMethod.accessCancel
    }
}

/// What started an automatic exchange, when not the reader coming into range
/// (`access.started` and `access.completed`'s `trigger`).
public enum AccessTrigger {
    /// An open-next window (`access.next`, the push-button).
    public static let openNext = "openNext"
}
