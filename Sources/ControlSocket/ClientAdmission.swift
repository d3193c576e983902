import NIOConcurrencyHelpers

/// The socket's limits on clients (docs/operations.md, "Resource envelope"). Every client
/// costs a file descriptor and a task: without a limit, ~1,000 idle connections used up
/// accessd's descriptors and crashed it (issue #17).
public struct ClientLimits: Hashable, Sendable {
    /// Connections at once; the next is told so (-32005) and closed.
    public var maximumClients: Int
    /// Of those, kept for operators and admins, so that observers (anyone in the socket's
    /// group) cannot fill the socket and lock out the people who run the door.
    public var reservedForOperators: Int
    /// A client that sent nothing for this long, has no request under way and no
    /// subscription is told so (-32006) and closed.
    public var idleTimeout: Duration
    /// A client that has not taken a line accessd is writing to it for this long (it does not
    /// read, and its socket is full) is closed: else its place, descriptor and queue were held
    /// for as long as it chose, and its -32003 or -32006 waited behind the blocked write.
    public var sendTimeout: Duration

    public init(
        maximumClients: Int = 128, reservedForOperators: Int = 16, idleTimeout: Duration = .seconds(300),
        sendTimeout: Duration = .seconds(30)
    ) {
        self.maximumClients = maximumClients
        self.reservedForOperators = min(reservedForOperators, maximumClients - 1)
        self.idleTimeout = idleTimeout
        self.sendTimeout = sendTimeout
    }
}

/// Counts connected clients against `ClientLimits`.
final class ClientAdmission: Sendable {
    enum Verdict: Equatable {
        case admitted
        /// `first`: the first refusal since a client was last admitted (worth a log line;
        /// the rest of a flood is not).
        case refused(limit: Int, first: Bool)
    }

    private struct Count {
        var connected = 0
        var refusing = false
    }

    let limits: ClientLimits
    private let count = NIOLockedValueBox(Count())

    init(limits: ClientLimits) {
        self.limits = limits
    }

    /// Whether a client of `role` may stay; if so it counts until `leave`.
    func admit(_ role: Role) -> Verdict {
        count.withLockedValue { count in
            let limit = role == .observer ? limits.maximumClients - limits.reservedForOperators : limits.maximumClients
            guard count.connected < limit else {
                defer { count.refusing = true }
                return .refused(limit: limit, first: !count.refusing)
            }
            count.connected += 1
            count.refusing = false
            return .admitted
        }
    }

    func leave() {
        count.withLockedValue { $0.connected -= 1 }
    }

    var connected: Int { count.withLockedValue { $0.connected } }
}

/// What the idle timeout looks at, for one client.
struct ClientActivity: Sendable {
    var lastHeard: ContinuousClock.Instant = .now
    /// A client's requests are handled one at a time, in order.
    var requestUnderWay = false
    var subscribed = false
    /// Since when a write to the client has waited for it to read (nil: none waiting).
    var writeWaitingSince: ContinuousClock.Instant?

    func isIdle(at now: ContinuousClock.Instant, timeout: Duration) -> Bool {
        !requestUnderWay && !subscribed && now - lastHeard >= timeout
    }
}
