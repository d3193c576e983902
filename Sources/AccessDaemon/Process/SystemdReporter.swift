/// What systemd hears from accessd while it runs: `WATCHDOG=1` at half the watchdog
/// interval (the status is read from the services' actors, so a stalled one stops the
/// pings and systemd restarts accessd), and `STATUS=` (shown by `systemctl status`) whenever the status line changes,
/// looked at every 2 s.
public struct SystemdReporter: Sendable {
    let notifier: SystemdNotifier
    let daemon: AccessDaemonServices

    public init(notifier: SystemdNotifier, daemon: AccessDaemonServices) {
        self.notifier = notifier
        self.daemon = daemon
    }

    public func run() async throws {
        guard notifier.socketPath != nil else { return }
        let watchdogEvery = notifier.watchdogInterval
        let statusEvery = min(.seconds(2), watchdogEvery ?? .seconds(2))
        var sinceWatchdog: Duration = .zero
        var shown = ""
        while true {
            let line = await daemon.statusLine()
            if line != shown {
                notifier.notify("STATUS=\(line)")
                shown = line
            }
            if let watchdogEvery, sinceWatchdog + statusEvery > watchdogEvery {
                notifier.notify("WATCHDOG=1")
                sinceWatchdog = .zero
            }
            try await Task.sleep(for: statusEvery)
            sinceWatchdog += statusEvery
        }
    }
}
