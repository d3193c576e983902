import AccessCore

/// When the next background sync is due: every `interval` after a success; after failures
/// 5 s, doubling, capped at the interval, so a site that is down is not hammered and one
/// that comes back is seen again soon.
struct SyncSchedule: Sendable {
    static let firstRetry: Duration = .seconds(5)

    private(set) var nextAt: Timestamp?
    private(set) var consecutiveFailures = 0
    var inProgress = false
    /// A sync was asked for while one ran that had read the credentials before the change
    /// that asked: the next one follows it at once (issue #31).
    private var forcedWhileRunning = false
    /// The credentials the running sync read when it started.
    private var readByRunning: Set<String> = []

    /// The next check runs a sync, for a credential just added (a registration, so its items
    /// arrive at once). A sync that is running follows with another only when it read the
    /// credentials before this one was added: a second sync at once, when the running one had
    /// it, took items meant for the next (seen as a flaky count in CredentialEndToEndTests).
    mutating func forceDue(for credential: String) {
        if inProgress, !readByRunning.contains(credential) { forcedWhileRunning = true }
        nextAt = nil
    }

    /// A sync starts and reads `credentials` as they are now, so what was asked for until
    /// now is served by it.
    mutating func started(reading credentials: Set<String>) {
        inProgress = true
        forcedWhileRunning = false
        readByRunning = credentials
    }

    func isDue(at now: Timestamp) -> Bool { !inProgress && (nextAt.map { now >= $0 } ?? true) }

    /// Records the outcome; returns the delay until the next attempt.
    mutating func finished(success: Bool, interval: Duration, at now: Timestamp) -> Duration {
        inProgress = false
        readByRunning = []
        let delay: Duration
        if success {
            consecutiveFailures = 0
            delay = interval
        } else {
            consecutiveFailures += 1
            let doubled = Self.firstRetry * (1 << min(consecutiveFailures - 1, 20))
            delay = min(doubled, interval)
        }
        nextAt = forcedWhileRunning ? nil : now + delay
        forcedWhileRunning = false
        return delay
    }
}

/// A feature's state as the SDK's feature-state delegate reports it, and as `feature.state`
/// last said it. The message is part of it: the same error code can have another cause at
/// the next attempt (a site restarting: its kept-alive connection closed, then nothing
/// listening), and `diagnose` reads the newest one.
struct FeatureState: Hashable, Sendable {
    var ok: Bool
    var error: String?
    var message: String?
}
