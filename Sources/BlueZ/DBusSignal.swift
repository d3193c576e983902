import NIOConcurrencyHelpers

/// What a signal subscription delivers (`DBusConnection.signals(matching:)`).
public enum DBusSignal: Sendable {
    case message(DBusMessage)
    /// `dropped` signals did not fit the subscription's buffer at this point of the stream:
    /// what they said is lost, so the subscriber reads the state it mirrors again.
    case overflow(dropped: Int)

    /// The signal, or nil for an overflow notice.
    public var message: DBusMessage? {
        if case .message(let message) = self { return message }
        return nil
    }
}

/// The signals of one subscription. At most `limit` wait for the subscriber; past that they
/// are dropped and counted, and one `.overflow` notice takes their place: queued before the
/// next signal that fits, or, if none comes, as soon as the subscriber has taken everything
/// before the gap. So a gap is always marked, also at the end of a burst.
public struct DBusSignalStream: AsyncSequence, Sendable {
    public typealias Element = DBusSignal

    let base: AsyncStream<DBusSignal>
    let gauge: Gauge

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), gauge: gauge)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<DBusSignal>.AsyncIterator
        let gauge: Gauge

        public mutating func next() async -> DBusSignal? {
            guard let signal = await base.next() else { return nil }
            gauge.taken()
            return signal
        }
    }

    /// Counts what waits and what was dropped; shared by the bus thread and the subscriber.
    final class Gauge: Sendable {
        private struct Counts {
            var waiting = 0
            var dropped = 0
        }

        private let limit: Int
        private let counts = NIOLockedValueBox(Counts())
        let continuation: AsyncStream<DBusSignal>.Continuation

        init(limit: Int, continuation: AsyncStream<DBusSignal>.Continuation) {
            self.limit = Swift.max(limit, 1)
            self.continuation = continuation
        }

        /// From the bus thread. Returns false when the signal was dropped.
        func offer(_ message: DBusMessage) -> Bool {
            counts.withLockedValue { counts in
                guard counts.waiting < limit else {
                    counts.dropped += 1
                    return false
                }
                if counts.dropped > 0 {
                    continuation.yield(.overflow(dropped: counts.dropped))
                    counts.waiting += 1
                    counts.dropped = 0
                }
                continuation.yield(.message(message))
                counts.waiting += 1
                return true
            }
        }

        /// The subscriber took one; when it has caught up, an unmarked gap is marked now.
        func taken() {
            counts.withLockedValue { counts in
                counts.waiting -= 1
                if counts.waiting == 0, counts.dropped > 0 {
                    continuation.yield(.overflow(dropped: counts.dropped))
                    counts.waiting = 1
                    counts.dropped = 0
                }
            }
        }
    }
}
