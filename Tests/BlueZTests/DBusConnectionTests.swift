import BlueZTestSupport
import Foundation
import SuiteTraits
import Testing

@testable import BlueZ

/// The shim's connection against a real dbus-daemon.
@Suite("D-Bus connection", .threadOfItsOwn, .timeLimit(.minutes(5)))
final class DBusConnectionTests {
    let bus: PrivateBus
    let connection: DBusConnection

    init() throws {
        bus = try PrivateBus()
        connection = try DBusConnection(address: bus.address)
    }

    deinit {
        connection.close()
    }

    func daemon(_ method: String, _ arguments: [DBusValue] = []) async throws(DBusError) -> [DBusValue] {
        try await connection.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus", method: method, arguments: arguments)
    }

    @Test func callsTheBusDaemon() async throws {
        #expect(connection.uniqueName.hasPrefix(":"))
        let names = try await daemon("ListNames").first?.strings ?? []
        #expect(names.contains(connection.uniqueName))
        let owner = try await daemon("GetNameOwner", [.string(connection.uniqueName)])
        #expect(owner.first?.string == connection.uniqueName)
    }

    @Test func remoteErrorsCarryTheirName() async throws {
        await #expect(throws: DBusError.self) { try await self.daemon("GetNameOwner", [.string("org.bluez")]) }
        do {
            _ = try await daemon("GetNameOwner", [.string("org.bluez")])
        } catch {
            #expect(error.name == "org.freedesktop.DBus.Error.NameHasNoOwner")
        }
        do {
            _ = try await connection.call(destination: "org.bluez", path: "/", interface: "x.y", method: "Z")
        } catch {
            #expect(error.name == "org.freedesktop.DBus.Error.ServiceUnknown")
        }
    }

    @Test func invalidArgumentsAreRefusedBeforeLibdbusSeesThem() async {
        await #expect(throws: DBusError.invalidArgument("invalid object path not/a/path")) {
            try await self.connection.call(
                destination: "org.freedesktop.DBus", path: "not/a/path",
                interface: "org.freedesktop.DBus", method: "ListNames")
        }
        await #expect(throws: DBusError.self) {
            try await self.daemon("GetNameOwner", [.string("a\u{0}b")])
        }
        await #expect(throws: DBusError.self) {
            try await self.daemon("GetNameOwner", [.array(elementSignature: "s", [.int32(1)])])
        }
    }

    @Test func valuesRoundTripThroughTheBus() async throws {
        // A signal to ourselves carries every type there and back.
        let values: [DBusValue] = [
            .byte(7), .bool(true), .int16(-2), .uint16(65535), .int32(-70000), .uint32(4_000_000_000),
            .int64(-1 << 40), .uint64(1 << 63), .double(2.5), .string("grüße"), .objectPath("/org/bluez/hci0"),
            .signature("a{sv}"), .bytes([0, 1, 255]), .bytes([]),
            .properties([
                "RSSI": .int16(-60),
                "ServiceData": .dictionary(
                    keySignature: "s", valueSignature: "v",
                    [.init(.string("fff8"), .variant(.bytes([1, 2])))]),
            ]),
            .structure([.string("a"), .uint32(1)]), .variant(.variant(.int32(3))),
            .dictionary(keySignature: "q", valueSignature: "v", [.init(.uint16(0xFFFF), .variant(.bytes([9])))]),
        ]
        let stream = try await connection.signals(matching: [
            DBusMatchRule(interface: "org.accessd.Test", member: "Echo")
        ])
        try connection.emitSignal(path: "/test", interface: "org.accessd.Test", name: "Echo", arguments: values)
        var iterator = stream.makeAsyncIterator()
        let received = await iterator.next()?.message
        #expect(received?.arguments == values)
        #expect(received?.sender == connection.uniqueName)
        #expect(received?.path == "/test")
    }

    @Test func subscriptionsEndWithTheirStream() async throws {
        var stream: DBusSignalStream? = try await connection.signals(matching: [
            DBusMatchRule(interface: "org.accessd.Test")
        ])
        #expect(connection.subscriptionCount == 1)
        _ = stream
        stream = nil
        #expect(connection.subscriptionCount == 0)
    }

    @Test func manyConcurrentCallsStayWithinTheBusLimit() async throws {
        // 200 at once exceed the daemon's ~128 pending replies per connection without the limiter.
        let connection = self.connection
        let count = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    try await connection.call(
                        destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                        interface: "org.freedesktop.DBus", method: "ListNames"
                    ).count
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(count == 200)
    }

    @Test func exportedObjectsAnswerMethodCalls() async throws {
        let server = try DBusConnection(address: bus.address)
        defer { server.close() }
        try server.export(path: "/org/accessd/echo") { call in
            if call.member == "Echo" {
                try? server.reply(to: call, with: call.arguments)
            } else {
                try? server.replyError(to: call, name: "org.accessd.Error.Unknown", message: "no \(call.member ?? "")")
            }
        }
        let answer = try await connection.call(
            destination: server.uniqueName, path: "/org/accessd/echo",
            interface: "org.accessd.Echo", method: "Echo", arguments: [.string("hi")])
        #expect(answer == [.string("hi")])
        do {
            _ = try await connection.call(
                destination: server.uniqueName, path: "/org/accessd/echo",
                interface: "org.accessd.Echo", method: "Nope")
            Issue.record("expected an error")
        } catch {
            #expect(error == .remote(name: "org.accessd.Error.Unknown", message: "no Nope"))
        }
        // A path nobody exported: libdbus answers UnknownObject or UnknownMethod for us.
        do {
            _ = try await connection.call(
                destination: server.uniqueName, path: "/elsewhere",
                interface: "org.accessd.Echo", method: "Echo")
            Issue.record("expected an error")
        } catch {
            #expect(error.name?.hasPrefix("org.freedesktop.DBus.Error.Unknown") == true)
        }
    }

    @Test func callsTimeOut() async throws {
        let server = try DBusConnection(address: bus.address)
        defer { server.close() }
        try server.export(path: "/slow") { _ in }  // never answers
        let start = ContinuousClock.now
        do {
            _ = try await connection.call(
                destination: server.uniqueName, path: "/slow", interface: "a.b", method: "C",
                timeout: .milliseconds(300))
            Issue.record("expected a timeout")
        } catch {
            #expect(error.name == "org.freedesktop.DBus.Error.NoReply")
        }
        // Not a timing test: the bound only tells a timeout from a hang.
        #expect(ContinuousClock.now - start < .seconds(30))
    }

    @Test func closingFailsWaitingCallsAndLaterOnes() async throws {
        let server = try DBusConnection(address: bus.address)
        try server.export(path: "/slow") { _ in }
        let client = try DBusConnection(address: bus.address)
        let waiting = Task {
            try await client.call(destination: server.uniqueName, path: "/slow", interface: "a.b", method: "C")
        }
        try await Task.sleep(for: .milliseconds(100))
        client.close()
        await #expect(throws: DBusError.self) { try await waiting.value }
        await #expect(throws: DBusError.disconnected) {
            _ = try await client.call(
                destination: "org.freedesktop.DBus",
                path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", method: "ListNames")
        }
        server.close()
    }
}
