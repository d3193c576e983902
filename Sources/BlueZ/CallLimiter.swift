import NIOConcurrencyHelpers

/// Bounds the calls in flight on one connection: the bus daemon's default limit of pending
/// replies per connection is about 128 (docs/bluez.md).
final class CallLimiter: Sendable {
    struct State {
        var available: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: NIOLockedValueBox<State>

    init(limit: Int) {
        state = NIOLockedValueBox(State(available: limit))
    }

    func acquire() async {
        let acquired = state.withLockedValue { state in
            guard state.available > 0 else { return false }
            state.available -= 1
            return true
        }
        if acquired { return }
        await withCheckedContinuation { continuation in
            let immediate = state.withLockedValue { state in
                if state.available > 0 {
                    state.available -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if immediate { continuation.resume() }
        }
    }

    func release() {
        let next = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.available += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
