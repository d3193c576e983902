import BlueZ
import Foundation

/// Records a client's events as they come, so a test can wait for one with a deadline.
final class EventRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [BlueZEvent] = []
    private var task: Task<Void, Never>?

    init(_ events: CoalescingQueue<BlueZEvent>) {
        task = Task { [weak self] in
            for await event in events {
                guard let self else { return }
                self.lock.withLock { self.recorded.append(event) }
            }
        }
    }

    var events: [BlueZEvent] {
        lock.withLock { recorded }
    }

    /// Waits until an event matching `predicate` has been recorded after position `from`;
    /// returns it, or nil after `timeout`. 60 s (the whole suite shares two cores with dozens of daemons): only reached when the event never comes; a
    /// loaded CI machine running the whole suite in parallel took more than 5 s to deliver one.
    func wait(from: Int = 0, timeout: Duration = .seconds(60), for predicate: (BlueZEvent) -> Bool) async -> BlueZEvent?
    {
        let deadline = ContinuousClock.now + timeout
        while true {
            // Looked at once more after the deadline: a sleep that overran it may have
            // slept through the event's arrival.
            let expired = ContinuousClock.now >= deadline
            if let found = events.dropFirst(from).first(where: predicate) { return found }
            if expired { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    deinit {
        task?.cancel()
    }
}
