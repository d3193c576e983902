import AccessCore
import AccessJSON
import BlueZTestSupport
import Foundation
import Testing

@testable import AccessDaemon
@testable import ControlSocket

/// The reader scope in the daemon (issue #13, item 1), over the fake central: a gateway
/// between two doors heard at one distance opens only the one it serves; the operator's rules
/// move readers in and out at run time; `readers.list` says what applies and why.
@Suite("Reader scope in the daemon", .serialized, .timeLimit(.minutes(5)))
struct ReaderScopeShellTests {
    static let other = ReaderID(0x2A02)
    static let otherAddress = "00:BB:02:00:00:00"

    private func twoDoors(_ rules: [ReaderID: ReaderScope.Rule]) async throws -> ShellHarness {
        let shell = try ShellHarness { configuration in
            configuration.automaticAccessOnStart = true
            configuration.readerRules = rules
        }
        try await shell.start()
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()))
        try await shell.readerAdvertises(
            FakeReader(shell.readerConfiguration(readerID: Self.other)), id: Self.other,
            address: Self.otherAddress)
        return shell
    }

    /// Two readers at one distance, one denied in the file: only the other opens, and a manual
    /// request to the denied one is refused with its own cause and where the rule is.
    @Test func aDeniedReaderIsNotOpened() async throws {
        let shell = try await twoDoors([ShellHarness.readerID: .init(listing: .denied)])
        let granted = try await shell.waitForEvent("access.completed") { $0["reader"] == "00002A02" }
        #expect(granted["granted"] == true, "\(granted)")
        try await Task.sleep(for: .seconds(1))
        let started = try shell.events("access.started")
        #expect(started.allSatisfy { $0["reader"] == "00002A02" }, "\(started)")
        #expect(await shell.central.device(ShellHarness.readerPath)?.connected != true)

        // Heard again (on a loaded machine the wait above can outlast [range] stale_timeout).
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()))
        var listed: [JSONValue] = []
        try await shell.waitUntil("2A01 listed") {
            listed = try await shell.call("readers.list").get()["readers"]?.array ?? []
            return listed.contains { $0["id"] == "00002A01" }
        }
        let denied = listed.first { $0["id"] == "00002A01" }
        #expect(
            denied?["scope"]?["automatic"] == false && denied?["scope"]?["automaticBecause"] == "denied", "\(listed)")
        #expect(denied?["scope"]?["ruleFrom"] == "configuration")
        #expect(listed.first { $0["id"] == "00002A02" }?["scope"]?["automaticBecause"] == "offered")

        let refused = await shell.call("access.request", ["reader": "2A01"], role: .operator)
        #expect(refused.failureData?["error"] == "forbidden")
        #expect(refused.failureData?["cause"] == "readerDenied")
        #expect(
            refused.failureMessage
                == "refused: reader 00002A01 is on this kiosk's deny list ([readers] or [reader.00002A01] in accessd.toml)",
            "\(refused)")
        await shell.stop()
    }

    /// An allow list: automatic access only to the readers on it; manual access to the others
    /// is still asked for as usual.
    @Test func anAllowListOpensOnlyItsReaders() async throws {
        let shell = try await twoDoors([Self.other: .init(listing: .allowed)])
        _ = try await shell.waitForEvent("access.completed") { $0["reader"] == "00002A02" }
        try await Task.sleep(for: .seconds(1))
        #expect(try shell.events("access.started").allSatisfy { $0["reader"] == "00002A02" })
        let manual = try await shell.call("access.request", ["reader": "2A01"], role: .operator).get()
        #expect(manual["granted"] == true, "\(manual)")
        await shell.stop()
    }

    /// At run time: an operator's deny takes a reader standing in auto range out (nothing
    /// starts), a reset brings the file's rule back and the reader, still in range, is opened
    /// at once; each change is journalled with who made it.
    @Test func anOperatorsRuleTakesEffectAtOnce() async throws {
        let shell = try ShellHarness { $0.automaticAccessOnStart = false }
        try await shell.start()
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()))
        let set = try await shell.call("readers.setScope", ["reader": "2A01", "list": "deny"], role: .operator).get()
        #expect(set["rules"] == [["reader": "00002A01", "list": "deny", "from": "operator"]], "\(set)")
        let changed = try await shell.waitForEvent("readers.scopeChanged")
        #expect(
            changed["reader"] == "00002A01" && changed["rule"]?["list"] == "deny" && changed["uid"] == 0, "\(changed)")
        _ = try await shell.call("automaticAccess.set", ["enabled": true], role: .operator).get()
        try await Task.sleep(for: .seconds(1))
        #expect(try shell.events("access.started").isEmpty)

        _ = try await shell.call("readers.resetScope", ["reader": "2A01"], role: .operator).get()
        let granted = try await shell.waitForEvent("access.completed", timeout: readinessCeiling)
        #expect(granted["reader"] == "00002A01" && granted["origin"] == "automatic", "\(granted)")
        await shell.stop()
    }

    /// Out of bounds and malformed rules are refused with the reason; an observer may look
    /// but not change.
    @Test func badRulesAreRefused() async throws {
        let shell = try ShellHarness()
        try await shell.start()
        let offset = await shell.call("readers.setScope", ["reader": "2A01", "pathLossOffset": 31], role: .operator)
        #expect(offset.failureMessage == "invalid params: a path-loss offset is between -30 and 30 dB", "\(offset)")
        let list = await shell.call("readers.setScope", ["reader": "2A01", "list": "maybe"], role: .operator)
        #expect(list.failureMessage == "invalid params: list must be allow or deny, not \"maybe\"", "\(list)")
        let reader = await shell.call("readers.setScope", ["reader": "door"], role: .operator)
        #expect(reader.failureCode == -32602)
        let observer = await shell.call("readers.setScope", ["reader": "2A01", "list": "deny"], role: .observer)
        #expect(observer.failureCode == -32001)
        #expect(try await shell.call("readers.getScope", role: .observer).get() == ["allowList": false, "rules": []])
        await shell.stop()
    }
}
