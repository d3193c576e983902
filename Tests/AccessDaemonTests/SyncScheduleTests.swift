import AccessCore
import Testing

@testable import AccessDaemon

@Suite(.timeLimit(.minutes(5)))
/// When the background sync runs next (`SyncSchedule`), driven with timestamps of its own.
struct SyncScheduleTests {
    let start = Timestamp(nanoseconds: 1_000_000_000_000)

    /// A registration asks for a sync at once so the new credential's items come; when a sync
    /// was already running, its end set the next one a whole `sync_interval` away and the
    /// items waited up to an hour (issue #31).
    @Test func aSyncAskedForWhileOneRunsFollowsIt() {
        var schedule = SyncSchedule()
        schedule.started(reading: ["A"])
        schedule.forceDue(for: "B")
        _ = schedule.finished(success: true, interval: .seconds(3600), at: start)
        #expect(schedule.isDue(at: start))
    }

    /// Asked for between the check that starts a sync and the sync reading the credentials.
    @Test func aSyncAskedForBeforeOneStartsIsServedByIt() {
        var schedule = SyncSchedule()
        schedule.inProgress = true
        schedule.forceDue(for: "B")
        schedule.started(reading: ["A", "B"])
        _ = schedule.finished(success: true, interval: .seconds(3600), at: start)
        #expect(!schedule.isDue(at: start))
        #expect(schedule.isDue(at: start + .seconds(3600)))
    }

    /// The registration's request came after the running sync had read the new credential
    /// (the registration stores it, then asks): that sync served it, and no second one
    /// follows at once to take items meant for the next (CredentialEndToEndTests counted an
    /// item short under load: this second sync had taken it).
    @Test func aSyncAskedForACredentialTheRunningOneReadIsServedByIt() {
        var schedule = SyncSchedule()
        schedule.started(reading: ["A"])
        schedule.forceDue(for: "A")
        _ = schedule.finished(success: true, interval: .seconds(3600), at: start)
        #expect(!schedule.isDue(at: start))
    }

    @Test func failuresBackOffFromFiveSecondsToTheInterval() {
        var schedule = SyncSchedule()
        let delays = (0..<6).map { _ in schedule.finished(success: false, interval: .seconds(60), at: start) }
        #expect(delays == [.seconds(5), .seconds(10), .seconds(20), .seconds(40), .seconds(60), .seconds(60)])
    }
}
