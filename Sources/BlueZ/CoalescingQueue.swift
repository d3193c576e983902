import NIOConcurrencyHelpers

/// A bounded, ordered queue with one consumer, where an element posted under a key replaces
/// the one still waiting under that key, in its place, unless an element without a key came
/// between them. For advertisements: a device's newest report supersedes the one not yet
/// taken (its state is cumulative: `DeviceState` carries everything the device last said),
/// so a slow consumer holds at most one report per device instead of every report since it
/// fell behind. Elements without a key (adapter, connection and lifecycle events, timers)
/// are never merged and nothing moves across them: a report that came after a device's
/// disconnection is taken after it.
///
/// Past `capacity` waiting elements, a post is refused (`.dropped`) and counted: the
/// producer decides what losing it means (the BlueZ client starts over, as when bluetoothd
/// restarts; `reset`). Written by hand: `AsyncStream` drops without telling which element,
/// and neither it nor swift-async-algorithms' channels merge by key.
public final class CoalescingQueue<Element: Sendable>: AsyncSequence, Sendable {
    public enum Posted: Equatable, Sendable {
        case queued
        /// Replaced the element waiting under the same key.
        case coalesced
        /// The queue was full: the element was not taken.
        case dropped
    }

    private struct Entry {
        var key: String?
        var element: Element
    }

    private struct State {
        var entries: [Entry] = []
        /// Index of the first element not yet taken (taken ones are compacted away in bulk).
        var head = 0
        /// Key → index in `entries` of the element waiting under it.
        var keyed: [String: Int] = [:]
        var waiter: CheckedContinuation<Element?, Never>?
        var finished = false
        var dropped = 0
        var coalesced = 0
        var waiting: Int { entries.count - head }
    }

    public let capacity: Int
    private let state = NIOLockedValueBox(State())

    public init(capacity: Int) {
        self.capacity = Swift.max(1, capacity)
    }

    /// Queues `element`, or hands it to the consumer waiting. Under `key`, it replaces the
    /// element waiting under that key since the last element without one, in its place.
    @discardableResult
    public func post(_ element: Element, key: String? = nil) -> Posted {
        let (posted, waiter) = state.withLockedValue { state -> (Posted, CheckedContinuation<Element?, Never>?) in
            guard !state.finished else { return (.dropped, nil) }
            if let waiter = state.waiter {
                state.waiter = nil
                return (.queued, waiter)
            }
            if let key, let index = state.keyed[key] {
                state.entries[index].element = element
                state.coalesced += 1
                return (.coalesced, nil)
            }
            guard state.waiting < capacity else {
                state.dropped += 1
                return (.dropped, nil)
            }
            if let key {
                state.keyed[key] = state.entries.count
            } else {
                state.keyed.removeAll(keepingCapacity: true)
            }
            state.entries.append(Entry(key: key, element: element))
            return (.queued, nil)
        }
        waiter?.resume(returning: element)
        return posted
    }

    /// Replaces everything waiting with `elements` (a fresh start after a drop), unkeyed.
    public func reset(to elements: [Element]) {
        let waiter = state.withLockedValue { state -> CheckedContinuation<Element?, Never>? in
            state.entries = elements.map { Entry(key: nil, element: $0) }
            state.head = 0
            state.keyed = [:]
            guard let waiter = state.waiter, !state.entries.isEmpty else { return nil }
            state.waiter = nil
            state.head = 1
            return waiter
        }
        if let waiter, let first = elements.first { waiter.resume(returning: first) }
    }

    /// No more elements: the consumer gets what is waiting, then nil.
    public func finish() {
        let waiter = state.withLockedValue { state -> CheckedContinuation<Element?, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// Elements waiting now, and refused or merged since the start (diagnostics, metrics).
    public var counts: (waiting: Int, dropped: Int, coalesced: Int) {
        state.withLockedValue { ($0.waiting, $0.dropped, $0.coalesced) }
    }

    /// The next element, in order; nil once finished and drained, or when the consumer's task
    /// is cancelled.
    func next() async -> Element? {
        guard !Task.isCancelled else { return nil }
        if let ready = take() { return ready.element }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Element?, Never>) in
                let now = state.withLockedValue { state -> Element?? in
                    if let entry = Self.take(&state) { return .some(entry.element) }
                    if state.finished || Task.isCancelled { return .some(nil) }
                    state.waiter = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLockedValue { state -> CheckedContinuation<Element?, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    private func take() -> Entry? {
        state.withLockedValue { Self.take(&$0) }
    }

    private static func take(_ state: inout State) -> Entry? {
        guard state.head < state.entries.count else { return nil }
        let entry = state.entries[state.head]
        state.head += 1
        if let key = entry.key { state.keyed[key] = nil }
        // Compact once the taken part is the larger half: amortised O(1), bounded memory.
        if state.head > 64 && state.head * 2 > state.entries.count {
            state.entries.removeFirst(state.head)
            for (key, index) in state.keyed { state.keyed[key] = index - state.head }
            state.head = 0
        }
        return entry
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let queue: CoalescingQueue

        public mutating func next() async -> Element? { await queue.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(queue: self) }
}
