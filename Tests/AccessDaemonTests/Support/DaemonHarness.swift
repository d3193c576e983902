import AccessJSON
import BlueZ
import BlueZTestSupport
import ControlSocket
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The real accessd binary against a private dbus-daemon with dbusmock's bluez5 template,
/// reached through its real socket.
final class DaemonHarness: @unchecked Sendable {
    let bus: PrivateBus
    let mock: BlueZMock
    let directory: String
    var socketPath: String { directory + "/a.sock" }
    var stateDirectory: String { directory + "/state" }
    var configPath: String { directory + "/accessd.toml" }
    private(set) var daemon: ChildProcess?

    static let readerAddress = "00:BB:01:00:00:00"
    static let readerPath = "/org/bluez/hci0/dev_00_BB_01_00_00_00"
    static let serviceDataUUID = "0000fff8-0000-1000-8000-00805f9b34fb"

    /// The accessd under test: in the directory ACCESSD_BINARIES names (scripts/test gives the
    /// lab the packaged release build there, with accessctl a link to accessd and readersim),
    /// else the one built beside this test binary. accessctl and readersim are its neighbours.
    static var accessdPath: String {
        if let directory = ProcessInfo.processInfo.environment["ACCESSD_BINARIES"], !directory.isEmpty {
            return URL(fileURLWithPath: directory).appendingPathComponent("accessd").path
        }
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        let executable = String(decoding: buffer[0..<max(length, 0)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
        if directory.lastPathComponent == "debug" || directory.lastPathComponent == "release" {
            return directory.appendingPathComponent("accessd").path
        }
        // Inside an .xctest bundle directory (other platforms).
        directory = directory.deletingLastPathComponent()
        return directory.appendingPathComponent("accessd").path
    }

    init(config: String = "", adapter: Bool = true) async throws {
        bus = try PrivateBus()
        directory = bus.directory.path
        mock = try await BlueZMock(bus: bus)
        if adapter { try await mock.addAdapter("hci0") }
        try writeConfig(config)
    }

    func writeConfig(_ text: String) throws {
        try Self.withoutRadioRecovery(text).write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    /// The radio's recovery ladder off unless the test names it: readers in a test advertise
    /// when told, not several times a second, so their silence is no stuck radio. The key goes
    /// where it shifts no line a test reads: after `[bluetooth]`, or in a section at the end.
    static func withoutRadioRecovery(_ text: String) -> String {
        guard !text.contains("radio_recovery") else { return text }
        if let header = text.range(of: "[bluetooth]\n") {
            return text.replacingCharacters(in: header, with: "[bluetooth]\nradio_recovery = false\n")
        }
        return text + (text.isEmpty || text.hasSuffix("\n") ? "" : "\n") + "[bluetooth]\nradio_recovery = false\n"
    }

    /// Starts accessd (through `wrapper`, a command that execs its arguments, when given)
    /// and waits until its socket answers.
    func start(extraArguments: [String] = [], environment: [String: String] = [:], wrapper: [String] = []) async throws
    {
        let process = try ChildProcess(
            wrapper + [
                Self.accessdPath, "--config", configPath, "--socket", socketPath, "--state-dir", stateDirectory,
                "--bus", bus.address,
            ] + extraArguments,
            environment: environment, output: directory + "/accessd.log")
        daemon = process
        for _ in 0..<1500 {  // 30 s: a loaded CI machine runs many daemons at once
            if let connection = try? ControlConnection(path: socketPath), (try? connection.call("status.get")) != nil {
                return
            }
            guard process.isRunning else { throw TestEnvironmentError("accessd exited: \(log)") }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestEnvironmentError("accessd did not answer on its socket: \(log)")
    }

    var log: String { (try? String(contentsOfFile: directory + "/accessd.log", encoding: .utf8)) ?? "" }

    /// SIGTERM (SIGKILL after 10 s); the exit status, nil when a signal ended it.
    func stop() -> Int32? {
        guard let daemon else { return nil }
        self.daemon = nil
        return daemon.stop(grace: 10).flatMap { $0 < 128 ? $0 : nil }
    }

    func kill() {
        daemon?.kill9()
        daemon = nil
    }

    func connect() throws -> ControlConnection {
        try ControlConnection(path: socketPath)
    }

    /// Waits until `condition` holds for status.get's answer.
    func waitForStatus(_ condition: (JSONValue) -> Bool) async throws -> JSONValue {
        let connection = try connect()
        var last: JSONValue = .null
        let deadline = ContinuousClock.now + readinessCeiling
        while ContinuousClock.now < deadline {
            if case .success(let status) = try connection.call("status.get") {
                last = status
                if condition(status) { return status }
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestEnvironmentError("status never matched; last: \(last)\n\(log)")
    }

    /// A reader advertising through the mock: ServiceData and RSSI as bluetoothd sets them.
    func advertise(payload: [UInt8], rssi: Int16, path: String = readerPath) async throws {
        try await mock.set(path, "org.bluez.Device1", "RSSI", .int16(rssi))
        try await mock.set(
            path, "org.bluez.Device1", "ServiceData",
            .dictionary(
                keySignature: "s", valueSignature: "v",
                [.init(.string(Self.serviceDataUUID), .variant(.bytes(payload)))]))
    }

    /// Waits until the mock recorded `method` on `path`.
    func waitForCall(_ method: String, on path: String = "/org/bluez/hci0") async throws -> Bool {
        let deadline = ContinuousClock.now + readinessCeiling
        while ContinuousClock.now < deadline {
            if try await mock.calls(path).contains(method) { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    deinit {
        daemon?.stop(grace: 2)
    }
}

/// Reads `count` notifications (a replay whose size the subscription answer gave); fewer
/// when none comes for `timeout`.
func readNotifications(_ connection: ControlConnection, count: Int64, timeout: Duration = .seconds(20)) throws
    -> [JSONValue]
{
    var notifications: [JSONValue] = []
    while notifications.count < count, connection.waitReadable(timeout: timeout) {
        notifications.append(try connection.nextNotification())
    }
    return notifications
}

/// Reads notifications until `predicate` matches one (or the deadline passes).
func waitForEvent(
    _ connection: ControlConnection, timeout: Duration = readinessCeiling,
    _ predicate: (JSONValue) -> Bool
) throws -> JSONValue? {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        guard connection.waitReadable(timeout: .milliseconds(100)) else { continue }
        let notification = try connection.nextNotification()
        if predicate(notification) { return notification }
    }
    return nil
}
