import AccessCore
import AccessJSON
import BlueZTestSupport
import Testing

@testable import AccessDaemon

/// The access engine performs the controller's actions in the order the controller gave them.
@Suite(.timeLimit(.minutes(5)))
struct AccessEngineOrderTests {
    /// Issue #31: an exchange that cannot start (the adapter went between the controller's
    /// decision and its start) ended inside `perform`, which handled that end's actions
    /// before the rest of the request's: the request was answered and its timer cancelled,
    /// then the timer was started, and ran for a request long answered.
    @Test func anExchangeThatCannotStartLeavesNoTimerBehind() async throws {
        let shell = try ShellHarness()
        try await shell.start()
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()))
        _ = shell.daemon.doors.access.post(.adapter(nil))
        try await shell.waitUntil("the adapter gone") { await shell.daemon.access.adapterPath == nil }
        let answer = await shell.call("access.request", ["reader": "2A01"])
        #expect(answer.failureData?["error"]?.string == "readerUnavailable", "\(answer)")
        let timers = await shell.daemon.access.timers.keys
        #expect(timers.isEmpty, "\(timers)")
        await shell.stop()
    }
}
