import NIOConcurrencyHelpers

/// How many exchanges (and held links) run now, for the radio's recovery ladder: it never
/// restarts discovery or power-cycles the adapter in the middle of one. Read without a hop
/// to the exchange engine, so the discovery service's tick stays synchronous.
final class ExchangeActivity: Sendable {
    private let count = NIOLockedValueBox(0)

    var isActive: Bool { count.withLockedValue { $0 > 0 } }

    func set(_ running: Int) {
        count.withLockedValue { $0 = running }
    }
}
