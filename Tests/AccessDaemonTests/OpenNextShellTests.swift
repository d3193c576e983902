import AccessCore
import AccessJSON
import BlueZTestSupport
import Foundation
import Testing

@testable import AccessDaemon
@testable import ControlSocket

/// Open the next door in the daemon (issue #13, item 2): `access.next` and `access.cancel`
/// over the fake central, the real `accessctl open-next` on a real socket, and the push-button
/// read from a device node (here a FIFO carrying `struct input_event` records: the lab drives
/// a real uinput device).
@Suite("Open the next door in the daemon", .serialized, .timeLimit(.minutes(5)))
struct OpenNextShellTests {
    /// tx power −59: −89 dBm is 30 dB of path loss, within manual range (40), outside auto (20).
    static let manualRange = -89
    /// 45 dB: heard, beyond manual range.
    static let beyondManualRange = -104

    @Test func theReaderInManualRangeOpensOnceWhenAsked() async throws {
        let shell = try ShellHarness()
        try await shell.start()
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()), rssi: Self.manualRange)
        try await Task.sleep(for: .milliseconds(300))
        #expect(try shell.events("access.started").isEmpty, "manual range alone opens nothing")
        let answer = try await shell.call("access.next", ["expiry": 5], role: .operator).get()
        #expect(answer["expirySeconds"] == 5, "\(answer)")
        let completed = try await shell.waitForEvent("access.completed")
        #expect(
            completed["granted"] == true && completed["trigger"] == "openNext" && completed["origin"] == "automatic",
            "\(completed)")
        #expect(try shell.events("access.started").first?["trigger"] == "openNext")
        let window = try shell.events("access.nextWindow")
        #expect(window.map { $0["state"] } == ["open", "closed"], "\(window)")
        #expect(window.last?["reason"] == "used" && window.last?["reader"] == "00002A01" && window.first?["uid"] == 0)
        // Once: heard again in manual range, nothing more.
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()), rssi: Self.manualRange)
        try await Task.sleep(for: .milliseconds(500))
        #expect(try shell.events("access.started").count == 1)
        await shell.stop()
    }

    @Test func nothingOpensAfterExpiryOrCancel() async throws {
        let shell = try ShellHarness()
        try await shell.start()
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()), rssi: Self.beyondManualRange)
        _ = try await shell.call("access.next", ["expiry": 1], role: .operator).get()
        let expired = try await shell.waitForEvent("access.nextWindow") { $0["state"] == "closed" }
        #expect(expired["reason"] == "expired", "\(expired)")
        _ = try await shell.call("access.next", role: .operator).get()
        #expect(try await shell.call("access.cancel", role: .operator).get() == ["cancelled": true])
        #expect(try await shell.call("access.cancel", role: .operator).get() == ["cancelled": false])
        #expect(try shell.events("access.nextWindow").last?["reason"] == "cancelled")
        // The person walks into manual range after the windows closed: nothing opens.
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()), rssi: Self.manualRange, times: 8)
        try await Task.sleep(for: .milliseconds(500))
        #expect(try shell.events("access.started").isEmpty)

        let zero = await shell.call("access.next", ["expiry": 0], role: .operator)
        #expect(zero.failureMessage == "invalid params: expiry is 1 to 60 seconds", "\(zero)")
        #expect(await shell.call("access.next", ["expiry": 61], role: .operator).failureCode == -32602)
        #expect(await shell.call("access.next", role: .observer).failureCode == -32001)
        await shell.stop()
    }

    /// `accessctl open-next` waits for the door and prints its decision; with nothing in
    /// range it says so when the window closes, exit 1.
    @Test func accessctlOpenNextPrintsTheDoor() async throws {
        let shell = try ShellHarness()
        try await shell.start()
        let socket = try await shell.serveSocket()
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()), rssi: Self.beyondManualRange)
        let nothing = try await taskOnThreadOfItsOwn {
            try runCommand(
                [AccessctlTests.accessctl, "open-next", "--expiry", "1", "--socket", socket], mergingErrors: true)
        }.value
        #expect(nothing.status == 1 && nothing.output == "no door within manual range in 1 s\n", "\(nothing.output)")

        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()), rssi: Self.manualRange)
        let opened = try await taskOnThreadOfItsOwn {
            try runCommand([AccessctlTests.accessctl, "open-next", "--socket", socket], mergingErrors: true)
        }.value
        #expect(opened.status == 0, "\(opened.output)")
        #expect(opened.output.hasPrefix("reader 00002A01: granted: granted (access) in "), "\(opened.output)")
        print("$ accessctl open-next\n\(opened.output)")
        // On a thread of its own: accessctl waits on this process's daemon, whose handlers need
        // the concurrency pool this test would otherwise block.
        let events = try await taskOnThreadOfItsOwn {
            try runCommand(
                [
                    AccessctlTests.accessctl, "events", "--kinds", "access.nextWindow,access.completed",
                    "--socket", socket,
                ], mergingErrors: true)
        }.value
        print("$ accessctl events --kinds access.nextWindow,access.completed\n\(events.output)")
        #expect(events.output.contains("open-next: reader 00002A01 is the next door (socket)"), "\(events.output)")
        #expect(events.output.contains("reader 00002A01: open-next granted: granted (access)"), "\(events.output)")
        await shell.stop()
    }

    /// The button: a press (EV_KEY, the key, value 1) opens the window; releases, auto-repeat
    /// and other keys do nothing.
    @Test func aButtonPressOpensTheNextDoor() async throws {
        let directory = NSTemporaryDirectory() + "accessd-button-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let device = directory + "/event0"
        #expect(mkfifo(device, 0o600) == 0)
        let keyboard = open(device, O_RDWR)
        defer { close(keyboard) }
        let shell = try ShellHarness { configuration in
            configuration.buttonDevice = device
            configuration.buttonKey = InputKeyCode("KEY_OK")!
        }
        try await shell.start()
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()), rssi: Self.manualRange)
        // Another key, a release, an auto-repeat: nothing.
        Self.write(keyboard, [(1, 28, 1), (1, 0x160, 0), (1, 0x160, 2), (0, 0, 0)])
        try await Task.sleep(for: .milliseconds(500))
        #expect(try shell.events("access.nextWindow").isEmpty)
        Self.write(keyboard, [(4, 4, 0x90001), (1, 0x160, 1), (0, 0, 0)])
        let completed = try await shell.waitForEvent("access.completed")
        #expect(completed["trigger"] == "openNext" && completed["granted"] == true, "\(completed)")
        #expect(try shell.events("access.nextWindow").first?["openedBy"] == "button")
        await shell.stop()
    }

    @Test func keyNamesAndRecords() throws {
        #expect(
            InputKeyCode("KEY_ENTER")?.code == 28 && InputKeyCode("KEY_A")?.code == 30
                && InputKeyCode("BTN_0")?.code == 256)
        #expect(
            InputKeyCode("KEY_F1")?.code == 59 && InputKeyCode("KEY_1")?.code == 2 && InputKeyCode("352")?.code == 352)
        #expect(InputKeyCode("KEY_NOPE") == nil && InputKeyCode("0") == nil && InputKeyCode("768") == nil)
        #expect(InputKeyCode("KEY_OK")?.description == "KEY_OK (352)")
        let config = try ConfigurationLoader.parse(
            "[button]\ndevice = \"/dev/input/event3\"\nkey = \"BTN_0\"\n", file: "a.toml")
        #expect(config.buttonDevice == "/dev/input/event3" && config.buttonKey.code == 256)
        #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.parse("[button]\nkey = \"KEY_NOPE\"\n", file: "a.toml")
        }
        #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.parse("[button]\ndevice = \"event3\"\n", file: "a.toml")
        }
    }

    /// `struct input_event` records as the kernel writes them (type, code, value).
    static func write(_ fd: Int32, _ events: [(UInt16, UInt16, Int32)]) {
        var bytes: [UInt8] = []
        for (type, code, value) in events {
            var record = [UInt8](repeating: 0, count: OpenNextButton.recordSize)
            let header = MemoryLayout<timeval>.size
            withUnsafeBytes(of: type.littleEndian) { record.replaceSubrange(header..<header + 2, with: $0) }
            withUnsafeBytes(of: code.littleEndian) { record.replaceSubrange(header + 2..<header + 4, with: $0) }
            withUnsafeBytes(of: value.littleEndian) { record.replaceSubrange(header + 4..<header + 8, with: $0) }
            bytes += record
        }
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }
}
