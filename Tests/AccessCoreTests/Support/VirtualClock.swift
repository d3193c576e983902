@testable import AccessCore

/// A clock the test moves by hand.
struct VirtualClock {
    private(set) var now = Timestamp.zero

    mutating func advance(_ duration: Duration) {
        now = now + duration
    }
}
