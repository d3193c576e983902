import AccessJSON
import AccessStore
import ControlSocket
import Logging
import NIOConcurrencyHelpers

/// The event journal and its fan-out: every event is appended to the store (which numbers
/// it), then handed to each subscriber that wants its kind, in sequence order. A subscriber
/// can ask for the events since a sequence number first: they are replayed in chunks without
/// holding up anyone else, and the switch from replay to live loses and repeats nothing.
///
/// A lock, not an actor: emitting is synchronous for every service (no suspension, so the
/// order of events is the order of the calls), and a replay runs on its caller's task.
public final class EventJournal: Sendable {
    /// Events read per step of a replay.
    public static let replayChunk = 1000

    struct State {
        var subscribers: [ControlClient: Set<String>?] = [:]
        var lastSequence: Int64
        var held = HeldEvents()
        /// Called when an event of their kinds is journalled (`watch(kinds:)`).
        var watchers: [Int: (kinds: Set<String>?, wake: @Sendable () -> Void)] = [:]
        var nextWatcher = 0
    }

    public struct Subscription: Sendable {
        public var replayed: Int
        public var lastSequence: Int64
        /// The oldest event the journal still keeps, when a replay was asked for.
        public var oldestAvailable: Int64?
    }

    let store: AccessStore
    private let logger: Logger
    private let state: NIOLockedValueBox<State>

    public init(store: AccessStore, logger: Logger) throws {
        self.store = store
        self.logger = logger
        self.state = NIOLockedValueBox(State(lastSequence: try store.lastSequence()))
    }

    /// The newest sequence number.
    public var lastSequence: Int64 { state.withLockedValue { $0.lastSequence } }

    /// Journals an event, then hands it to every subscriber that wants its kind. When the
    /// store refuses it, it is held (`HeldEvents`) and written, after those held before it,
    /// by the first emit that finds the store working again.
    /// Where a replay of the events from `time` on starts (`events.subscribe {sinceTime}`).
    func sequence(before time: Double) throws -> Int64 {
        try store.sequence(before: time)
    }

    public func emit<Data: ControlEventData>(_ data: Data) {
        emit(HeldEvents.Event(event: data.event, data: data.json, time: Clocks.wall()))
    }

    private func emit(_ event: HeldEvents.Event) {
        var woken: [@Sendable () -> Void] = []
        let written: [(event: AccessStore.Event, typed: HeldEvents.Event)] = state.withLockedValue { state in
            let pending = state.held.pending + [event]
            let appended: [AccessStore.Event]
            do {
                appended = try store.append(pending.map { ($0.kind.rawValue, $0.data.jsonText, $0.time) })
            } catch {
                state.held.hold(event)
                if !state.held.failing {
                    state.held.failing = true
                    logger.error(
                        "cannot journal events: holding them until it can",
                        metadata: ["error": "\(error)", "capacity": "\(HeldEvents.capacity)"])
                }
                return []
            }
            if pending.count > 1 {
                let (held, lost) = state.held.written()
                logger.notice("journaling events again", metadata: ["held": "\(held)", "lost": "\(lost)"])
            }
            let written = Array(zip(appended, pending))
            for (event, typed) in written { fanOut(event, typed: typed, to: state.subscribers) }
            state.lastSequence = appended.last?.sequence ?? state.lastSequence
            woken = state.watchers.values.filter { watcher in
                appended.contains { watcher.kinds?.contains($0.kind) ?? true }
            }.map(\.wake)
            return written
        }
        for wake in woken { wake() }
        // Outside the lock, and the fields built only when the level is logged (reader
        // sightings, at debug, are most events).
        for (event, typed) in written {
            logger.log(
                level: JournalFields.level(typed.event), "event \(event.kind)",
                metadata: JournalFields.metadata(typed.event, sequence: event.sequence))
        }
    }

    /// Calls `wake` (outside the journal's lock, so it must not block) after events of
    /// `kinds` (every kind when nil) are journalled, until `unwatch`: for services that follow
    /// the journal and read it themselves, such as the audit upload and the MQTT bridge.
    func watch(kinds: Set<String>?, _ wake: @escaping @Sendable () -> Void) -> Int {
        state.withLockedValue { state in
            state.nextWatcher += 1
            state.watchers[state.nextWatcher] = (kinds, wake)
            return state.nextWatcher
        }
    }

    func unwatch(_ token: Int) {
        state.withLockedValue { _ = $0.watchers.removeValue(forKey: token) }
    }

    private func fanOut(
        _ event: AccessStore.Event, typed: HeldEvents.Event, to subscribers: [ControlClient: Set<String>?]
    ) {
        let line = Self.notification(event, data: typed.data)
        // Built once, for the first observer that needs it.
        var observerLine: String?
        for (client, kinds) in subscribers where kinds?.contains(event.kind) ?? true {
            if client.role == .observer, let redacted = typed.kind.redactedForObservers(typed.data) {
                let redactedLine = observerLine ?? Self.notification(event, data: redacted)
                observerLine = redactedLine
                client.deliver(sequence: event.sequence, notification: redactedLine)
            } else {
                client.deliver(sequence: event.sequence, notification: line)
            }
        }
    }

    /// Subscribes `client` to the events of `kinds` (all when nil), after replaying those
    /// since `since` when given. Replay runs in chunks outside the lock, so emitters are not
    /// held up; the last chunk is read under it, so no event falls between replay and live.
    public func subscribe(_ client: ControlClient, kinds: Set<String>?, since: Int64?) throws -> Subscription {
        guard let since else {
            return state.withLockedValue { state in
                state.subscribers[client] = .some(kinds)
                client.setSubscribed(true)
                return Subscription(replayed: 0, lastSequence: state.lastSequence, oldestAvailable: nil)
            }
        }
        let oldest = try store.firstSequence()
        var replay = (count: 0, cursor: since)
        let fitted = try self.replay(kinds, to: client, from: &replay)
        return try state.withLockedValue { state in
            let complete = try fitted && self.replay(kinds, to: client, from: &replay)
            if !complete {
                // The queue is full: what is left is one events.dropped notice, not read.
                client.deliverDropped(from: replay.cursor + 1, to: state.lastSequence)
            }
            state.subscribers[client] = .some(kinds)
            client.setSubscribed(true)
            return Subscription(replayed: replay.count, lastSequence: state.lastSequence, oldestAvailable: oldest)
        }
    }

    /// Delivers the journal's events after `replay.cursor`, a chunk at a time, to the end;
    /// false when the client's queue filled first. A replay reads at most as many events as
    /// the queue holds (`[socket] subscriber_queue`), whatever the journal's size: looping
    /// `since: 0` on a large journal cost 4 s a time when every event was read (issue #17).
    private func replay(
        _ kinds: Set<String>?, to client: ControlClient,
        from replay: inout (count: Int, cursor: Int64)
    ) throws -> Bool {
        while true {
            let room = client.eventRoom
            guard room > 0 else { return false }
            let limit = min(Self.replayChunk, room)
            let batch = try store.events(after: replay.cursor, kinds: kinds, limit: limit)
            deliver(batch, to: client)
            replay.count += batch.count
            if let last = batch.last { replay.cursor = last.sequence }
            guard batch.count == limit else { return true }
        }
    }

    /// Whether the client was subscribed.
    @discardableResult
    public func unsubscribe(_ client: ControlClient) -> Bool {
        client.setSubscribed(false)
        return state.withLockedValue { $0.subscribers.removeValue(forKey: client) != nil }
    }

    private func deliver(_ events: [AccessStore.Event], to client: ControlClient) {
        for event in events {
            var data = (try? JSONValue.parse(event.data)) ?? .null
            if client.role == .observer, let redacted = EventKind(rawValue: event.kind)?.redactedForObservers(data) {
                data = redacted
            }
            client.deliver(sequence: event.sequence, notification: Self.notification(event, data: data))
        }
    }

    static func notification(_ event: AccessStore.Event, data: JSONValue) -> String {
        RPCRequest.eventNotification(sequence: event.sequence, time: event.time, kind: event.kind, data: data)
    }

    /// Retention: at start, then hourly, the journal keeps at most `maxEvents` events and
    /// none older than `maxAge`.
    public func runRetention(maxEvents: Int, maxAge: Duration, clock: any Clock<Duration>) async throws {
        while true {
            do {
                try store.prune(maxEvents: maxEvents, maxAge: Double(maxAge.components.seconds), now: Clocks.wall())
            } catch {
                logger.error("journal retention failed", metadata: ["error": "\(error)"])
            }
            try await clock.sleep(for: .seconds(3600))
        }
    }
}
