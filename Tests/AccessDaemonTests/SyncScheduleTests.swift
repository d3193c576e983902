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
        schedule.inProgress = true
        schedule.forceDue()
        _ = schedule.finished(success: true, interval: .seconds(3600), at: start)
        #expect(schedule.isDue(at: start))
    }

    @Test func aSyncAskedForBeforeOneStartsIsServedByIt() {
        var schedule = SyncSchedule()
        schedule.forceDue()
        schedule.started()
        _ = schedule.finished(success: true, interval: .seconds(3600), at: start)
        #expect(!schedule.isDue(at: start))
        #expect(schedule.isDue(at: start + .seconds(3600)))
    }

    @Test func failuresBackOffFromFiveSecondsToTheInterval() {
        var schedule = SyncSchedule()
        let delays = (0..<6).map { _ in schedule.finished(success: false, interval: .seconds(60), at: start) }
        #expect(delays == [.seconds(5), .seconds(10), .seconds(20), .seconds(40), .seconds(60), .seconds(60)])
    }
}
