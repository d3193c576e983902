import AccessCore
import AccessJSON
import BlueZTestSupport
import Testing

@testable import AccessDaemon

/// The held link (`connect_early`) in the shell: who owns it, and the order of its Connect
/// and Disconnect, over the fake central.
@Suite(.timeLimit(.minutes(5)))
struct HeldLinkShellTests {
    /// Issue #31: an exchange that took over a held link still connecting, and ended before
    /// the Connect was answered, sent its Disconnect at once: bluetoothd went on connecting,
    /// and the link came up after with nobody to drop it.
    @Test func anExchangeEndingWhileItsHeldLinkConnectsDisconnectsOnlyAfterTheConnect() async throws {
        let shell = try ShellHarness { configuration in
            configuration.connectEarly = true
            configuration.automaticAccessOnStart = true
            configuration.manualTimeout = .seconds(1)
        }
        try await shell.start()
        await shell.central.setConnectBehaviour(.hang, for: ShellHarness.readerPath)
        // Within manual range, outside auto range: connected early; the Connect hangs.
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()), rssi: -90)
        try await shell.waitUntil("connecting early") { await shell.central.callCount("Connect") == 1 }
        // The request takes the held link over and times out while it still connects.
        let answer = await shell.call("access.request", ["reader": "2A01"])
        #expect(answer.failureData?["error"]?.string == "timeout", "\(answer)")
        await shell.central.answerConnect(ShellHarness.readerPath)
        try await shell.waitUntil("the Connect answered") {
            await shell.central.connectAnswered[ShellHarness.readerPath] != nil
        }
        try await shell.waitUntil("dropped after its Connect", timeout: .seconds(5)) {
            let disconnects = await shell.central.callCount("Disconnect")
            let device = await shell.central.device(ShellHarness.readerPath)
            return disconnects >= 1 && device?.connected == false
        }
        let calls = await shell.central.calls
        let answered = try #require(await shell.central.connectAnswered[ShellHarness.readerPath])
        let disconnect = try #require(calls.firstIndex(of: "Disconnect " + ShellHarness.readerPath))
        #expect(
            disconnect >= answered, "Disconnect was call \(disconnect), the Connect answered after call \(answered)")
        #expect(calls.filter { $0.hasPrefix("Connect") }.count == 1, "\(calls)")
        await shell.stop()
    }
}
