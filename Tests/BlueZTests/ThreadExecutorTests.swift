import BlueZTestSupport
import Foundation
import SuiteTraits
import Testing

/// The executor the end-to-end suites run their tests on.
@Suite("A thread of its own", .timeLimit(.minutes(5)))
struct ThreadExecutorTests {
    @Test func bodyRunsOnTheExecutorsThread() async throws {
        let executor = ThreadExecutor()
        defer { executor.stop() }
        #expect(!executor.isCurrent)
        #expect(await withTaskExecutorPreference(executor) { executor.isCurrent })
        #expect(await withThreadOfItsOwn { ThreadExecutor.isRunningOnOne })
        #expect(try await taskOnThreadOfItsOwn { ThreadExecutor.isRunningOnOne }.value)
    }

    /// Bodies blocked at once do not hold each other up, however few cores the machine has:
    /// each waits, blocking its thread, until all have arrived; on a shared pool with fewer
    /// threads than bodies the last would never start.
    @Test func blockedBodiesStopNothingElse() async {
        let barrier = Barrier(parties: 4)
        async let first = withThreadOfItsOwn { barrier.arriveAndWait() }
        async let second = withThreadOfItsOwn { barrier.arriveAndWait() }
        async let third = withThreadOfItsOwn { barrier.arriveAndWait() }
        async let fourth = withThreadOfItsOwn { barrier.arriveAndWait() }
        let arrived = await [first, second, third, fourth]
        #expect(arrived == [true, true, true, true])
    }

    @Test func jobsAfterStopStillRun() async {
        let executor = ThreadExecutor()
        executor.stop()
        let value = await withTaskExecutorPreference(executor) { 42 }
        #expect(value == 42)
    }
}

/// What `.threadOfItsOwn` gives a suite's tests.
@Suite("Tests on threads of their own", .threadOfItsOwn, .timeLimit(.minutes(5)))
struct ThreadOfItsOwnTraitTests {
    @Test func runsOnAThreadOfItsOwn() {
        #expect(ThreadExecutor.isRunningOnOne)
    }

    @Test func staysThereAcrossSuspensions() async throws {
        try await Task.sleep(for: .milliseconds(10))
        #expect(ThreadExecutor.isRunningOnOne)
    }
}

/// Blocks each caller until `parties` callers have arrived (false after 30 s).
private final class Barrier: @unchecked Sendable {
    private let condition = NSCondition()
    private let parties: Int
    private var arrived = 0

    init(parties: Int) { self.parties = parties }

    func arriveAndWait() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        arrived += 1
        condition.broadcast()
        let deadline = Date().addingTimeInterval(30)
        while arrived < parties {
            if !condition.wait(until: deadline) { return false }
        }
        return true
    }
}
