import NIOConcurrencyHelpers

/// What waits to be written to one client: answers to its requests, and the events it
/// subscribed to. Answers always go first and are never dropped (a client with too many
/// unanswered requests is disconnected instead). Events are bounded: when a client does
/// not read, new events are dropped and replaced by one `events.dropped {from, to}` notice
/// at their place, so the client knows exactly what to replay with `since`.
final class ClientOutbox: @unchecked Sendable {
    private enum Entry {
        case event(sequence: Int64, line: String)
        case gap(from: Int64, to: Int64)
    }

    private let lock = NIOLock()
    private var responses: [String] = []
    private var events: [Entry] = []
    private var eventCount = 0
    private var waiter: CheckedContinuation<String?, Never>?
    private var closed = false
    /// No more requests will come: what is queued is written, then the outbox closes.
    private var finishing = false
    /// Set while one of the client's requests is being handled: events then wait in the
    /// queue, so that the answer (for example to events.subscribe) is written before the
    /// events the request produced.
    private var holding = false
    let eventLimit: Int
    let responseLimit: Int
    private let dropped: DroppedEventCounter

    init(eventLimit: Int, responseLimit: Int = 256, dropped: DroppedEventCounter = DroppedEventCounter()) {
        self.eventLimit = eventLimit
        self.responseLimit = responseLimit
        self.dropped = dropped
    }

    private func locked<T>(_ body: () -> T) -> T {
        lock.withLock(body)
    }

    func beginRequest() {
        locked { holding = true }
    }

    /// Ends a request that has no answer (a JSON-RPC notification).
    func endRequest() {
        let wake = locked { () -> (CheckedContinuation<String?, Never>, String)? in
            holding = false
            guard let waiter, let line = takeNext() else { return nil }
            self.waiter = nil
            return (waiter, line)
        }
        wake.map { $0.0.resume(returning: $0.1) }
    }

    /// Whether another answer fits (it always does when the writer keeps up).
    var hasRoom: Bool { locked { closed || responses.count < responseLimit } }

    /// Waits while `responseLimit` answers wait to be written: a client that pipelines
    /// faster than it reads is slowed down, not dropped. False when there is still no room
    /// after `patience` (the client does not read).
    func waitForRoom(patience: Duration) async -> Bool {
        let deadline = ContinuousClock.now + patience
        while !hasRoom {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    /// False when the client has too many answers waiting: it should be disconnected.
    /// `force`: the last answer before hanging up, queued whatever is waiting.
    func pushResponse(_ line: String, force: Bool = false) -> Bool {
        let (accepted, wake) = locked { () -> (Bool, CheckedContinuation<String?, Never>?) in
            holding = false
            guard !closed, force || responses.count < responseLimit else { return (false, nil) }
            if let waiter {
                self.waiter = nil
                return (true, waiter)
            }
            responses.append(line)
            return (true, nil)
        }
        wake?.resume(returning: line)
        return accepted
    }

    /// Queues an event, or records it as dropped when the queue is full.
    func pushEvent(sequence: Int64, line: String) {
        let wake = locked { () -> CheckedContinuation<String?, Never>? in
            guard !closed else { return nil }
            if let waiter, events.isEmpty, !holding {
                self.waiter = nil
                return waiter
            }
            if eventCount >= eventLimit {
                dropped.add(1)
                if case .gap(let from, _)? = events.last {
                    events[events.count - 1] = .gap(from: from, to: sequence)
                } else {
                    events.append(.gap(from: sequence, to: sequence))
                }
                return nil
            }
            events.append(.event(sequence: sequence, line: line))
            eventCount += 1
            return nil
        }
        wake?.resume(returning: line)
    }

    /// How many more events fit before they are dropped (0 once they are).
    var eventRoom: Int {
        locked {
            if closed { return 0 }
            if case .gap? = events.last { return 0 }
            return max(0, eventLimit - eventCount)
        }
    }

    /// Records the events `from...to` as dropped without having them: a replay larger than
    /// the queue stops reading the journal where the queue is full.
    func pushGap(from: Int64, to: Int64) {
        dropped.add(Int(max(0, to - from + 1)))
        let wake = locked { () -> (CheckedContinuation<String?, Never>, String)? in
            guard !closed, from <= to else { return nil }
            if case .gap(let first, _)? = events.last {
                events[events.count - 1] = .gap(from: first, to: to)
            } else {
                events.append(.gap(from: from, to: to))
            }
            guard let waiter, let line = takeNext() else { return nil }
            self.waiter = nil
            return (waiter, line)
        }
        wake.map { $0.0.resume(returning: $0.1) }
    }

    /// The next line to write; nil once closed.
    func next() async -> String? {
        await withCheckedContinuation { continuation in
            let ready = locked { () -> String?? in
                if let line = takeNext() { return .some(line) }
                if closed || finishing { return .some(nil) }
                waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Under the lock: the next answer, or (when not holding) the next event or gap notice.
    private func takeNext() -> String? {
        if !responses.isEmpty { return responses.removeFirst() }
        guard !holding, !events.isEmpty else { return nil }
        switch events.removeFirst() {
        case .event(_, let line):
            eventCount -= 1
            return line
        case .gap(let from, let to):
            return RPCRequest.notification(
                method: RPCRequest.eventsDroppedMethod, params: ["from": .int(from), "to": .int(to)])
        }
    }

    /// The client sent its last request: the queue drains, then `next` returns nil.
    func finish() {
        let wake = locked { () -> CheckedContinuation<String?, Never>? in
            finishing = true
            holding = false
            guard takeNextIsEmpty else { return nil }
            defer { waiter = nil }
            return waiter
        }
        wake?.resume(returning: nil)
    }

    /// Under the lock: nothing could be written now.
    private var takeNextIsEmpty: Bool { responses.isEmpty && events.isEmpty }

    /// Whether the client has stopped sending (it closed, or shut its side) or is closed.
    var hasHungUp: Bool { locked { closed || finishing } }

    func close() {
        let wake = locked { () -> CheckedContinuation<String?, Never>? in
            closed = true
            defer { waiter = nil }
            return waiter
        }
        wake?.resume(returning: nil)
    }

}

/// Events dropped for subscribers that did not keep up, over every client of a server.
final class DroppedEventCounter: Sendable {
    private let count = NIOLockedValueBox(0)

    func add(_ events: Int) {
        count.withLockedValue { $0 += events }
    }

    var total: Int { count.withLockedValue { $0 } }
}
