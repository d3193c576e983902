import NIOConcurrencyHelpers
import NIOCore

/// Who holds the metrics server's connections. At most `limit` at once; when all are taken, a
/// new scraper takes the place of the connection that has waited longest without a request
/// under way. A client that opens every connection and sends nothing locked every other
/// scraper out (issue #33: 87 of 90 scrapes failed); now it only loses its own idle ones. When
/// every connection is in the middle of a request, the newcomer is told `503` and closed.
final class MetricsConnections: Sendable {
    private struct Held {
        var channel: any Channel
        var busy: Bool
        /// Order of the last request's end (or the connection's start): the oldest idle goes.
        var idleSince: UInt64
    }

    private struct State {
        var held: [ObjectIdentifier: Held] = [:]
        var clock: UInt64 = 0
    }

    let limit: Int
    private let state = NIOLockedValueBox(State())

    init(limit: Int) {
        self.limit = limit
    }

    /// Admits `channel`, closing the longest-idle connection to make room if need be; false
    /// when every held connection is busy.
    func admit(_ channel: any Channel) -> Bool {
        let (admitted, evicted) = state.withLockedValue { state -> (Bool, (any Channel)?) in
            var evicted: (any Channel)?
            if state.held.count >= limit {
                guard
                    let oldest = state.held.filter({ !$0.value.busy }).min(by: {
                        $0.value.idleSince < $1.value.idleSince
                    })
                else { return (false, nil) }
                evicted = oldest.value.channel
                state.held[oldest.key] = nil
            }
            state.clock += 1
            state.held[ObjectIdentifier(channel)] = Held(channel: channel, busy: false, idleSince: state.clock)
            return (true, evicted)
        }
        evicted?.close(promise: nil)
        return admitted
    }

    func release(_ channel: any Channel) {
        _ = state.withLockedValue { $0.held.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// A request began (`true`) or its answer was written (`false`).
    func setBusy(_ channel: any Channel, _ busy: Bool) {
        state.withLockedValue { state in
            state.clock += 1
            state.held[ObjectIdentifier(channel)]?.busy = busy
            state.held[ObjectIdentifier(channel)]?.idleSince = state.clock
        }
    }
}
