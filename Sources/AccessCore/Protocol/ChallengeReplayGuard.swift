/// Remembers the most recent reader challenge nonces, so that a recorded challenge replayed
/// by a relay or a spoofed reader is refused. Bounded: the oldest nonce is forgotten first.
public struct ChallengeReplayGuard: Sendable {
    public let capacity: Int
    private var seen: Set<[UInt8]> = []
    private var order: [[UInt8]] = []
    private var next = 0

    public init(capacity: Int = 4096) {
        self.capacity = max(1, capacity)
    }

    /// Records `nonce`; false when it was seen before.
    public mutating func admit(_ nonce: [UInt8]) -> Bool {
        guard !seen.contains(nonce) else { return false }
        if order.count < capacity {
            order.append(nonce)
        } else {
            seen.remove(order[next])
            order[next] = nonce
            next = (next + 1) % capacity
        }
        seen.insert(nonce)
        return true
    }
}
