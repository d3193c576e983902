import AccessCore
import AccessJSON
import BlueZTestSupport
import Clocks
import Foundation
import Testing

@testable import AccessDaemon
@testable import ControlSocket

/// A refused or failed manual request says why (issue #12, item 5): the SDK's error stays in
/// `data.error`, and `data.cause` with the message tell apart what `forbidden` folds together
/// (no credential, a suspended one, a reader that offers nothing), name the readers heard when
/// the id is wrong, and say in which phase a failure happened and after how long.
@Suite("Manual refusals and failures say why", .timeLimit(.minutes(5)))
struct ManualAnswerTests {
    @Test func aMistypedReaderListsTheReadersHeard() async throws {
        let shell = try ShellHarness()
        try await shell.start()
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()))
        let result = await shell.call("access.request", ["reader": "2A1"])
        #expect(result.failureData?["error"] == "readerUnavailable")
        #expect(result.failureData?["cause"] == "readerNotHeard")
        #expect(result.failureData?["heard"] == ["00002A01"])
        #expect(result.failureMessage == "refused: reader 000002A1 is not heard; heard now: 00002A01", "\(result)")
        await shell.stop()
    }

    @Test func aReaderWithoutActionsSaysSo() async throws {
        let shell = try ShellHarness()
        try await shell.start()
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()))
        let result = await shell.call("actions.list", ["reader": "2A01"])
        #expect(result.failureData?["error"] == "forbidden")
        #expect(result.failureData?["cause"] == "actionsNotOffered")
        #expect(result.failureMessage?.contains("reader 00002A01 offers no actions") == true, "\(result)")
        await shell.stop()
    }

    @Test func noCredentialForTheSiteIsNotASuspendedOne() async throws {
        let shell = try ShellHarness()
        try await shell.start()
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()), siteTag: SiteTag(0x0BAD_5173))
        let none = await shell.call("access.request", ["reader": "2A01"])
        #expect(none.failureData?["error"] == "forbidden")
        #expect(none.failureData?["cause"] == "noCredentialForSite")
        #expect(none.failureData?["site"] == "0BAD5173")
        #expect(none.failureMessage?.contains("accessctl credentials register") == true, "\(none)")
        await shell.stop()

        let suspended = try ShellHarness(credentialState: .suspended)
        try await suspended.start()
        try await suspended.readerAdvertises(FakeReader(suspended.readerConfiguration()))
        let result = await suspended.call("access.request", ["reader": "2A01"])
        #expect(result.failureData?["error"] == "forbidden")
        #expect(result.failureData?["cause"] == "credentialSuspended")
        #expect(result.failureMessage?.contains("is suspended by the site") == true, "\(result)")
        await suspended.stop()
    }

    /// The request's own deadline ends an exchange stuck connecting: the answer waits for the
    /// aborted exchange to end, and says where it was.
    @Test func aTimeoutNamesThePhaseItStoppedIn() async throws {
        let clock = TestClock<Duration>()
        let shell = try ShellHarness(clock: clock)
        try await shell.start()
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()))
        await shell.central.setConnectBehaviour(.hang, for: ShellHarness.readerPath)
        async let answer = shell.call("access.request", ["reader": "2A01"])
        try await shell.waitUntil("connecting") { await shell.central.callCount("Connect") == 1 }
        await clock.advance(by: .seconds(16))
        let result = await answer
        #expect(result.failureData?["error"] == "timeout")
        #expect(result.failureData?["cause"] == "requestTimeout")
        #expect(result.failureData?["phase"] == "connect")
        #expect(result.failureMessage?.hasPrefix("access failed: timeout while connecting after ") == true, "\(result)")
        #expect(result.failureMessage?.contains("[access] manual_timeout") == true, "\(result)")
        let completed = try await shell.waitForEvent("access.completed")
        #expect(completed["error"] == "timeout")
        await shell.stop()
    }
}
