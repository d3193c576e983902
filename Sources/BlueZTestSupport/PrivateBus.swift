import BlueZ
import Foundation

/// A dbus-daemon of the test's own, on a socket in a temporary directory, with a policy that
/// allows everything: the stand-in for the system bus.
public final class PrivateBus: @unchecked Sendable {
    public let directory: URL
    public let address: String
    private let daemon: ChildProcess

    /// `parent`: where its directory goes (another than the temporary directory when a
    /// service with a private /tmp is to reach the bus).
    public init(parent: URL = FileManager.default.temporaryDirectory) throws {
        directory = parent.appendingPathComponent("accessd-bus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let socket = directory.appendingPathComponent("bus").path
        address = "unix:path=\(socket)"
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>\(address)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow own="*"/>
                <allow send_type="method_call"/>
                <allow send_type="signal"/>
                <allow send_type="method_return"/>
                <allow send_type="error"/>
                <allow receive_type="method_call"/>
                <allow receive_type="signal"/>
                <allow receive_type="method_return"/>
                <allow receive_type="error"/>
              </policy>
            </busconfig>
            """
        let configPath = directory.appendingPathComponent("bus.conf").path
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        daemon = try ChildProcess(
            ["/usr/bin/dbus-daemon", "--config-file=\(configPath)", "--nofork", "--nopidfile"],
            output: directory.appendingPathComponent("dbus-daemon.log").path)
        // The socket file appears at bind(), a moment before listen(): wait until a
        // connection is accepted, not just for the file.
        let deadline = Date().addingTimeInterval(10)
        while true {
            if FileManager.default.fileExists(atPath: socket), let probe = try? DBusConnection(address: address) {
                probe.close()
                break
            }
            guard Date() < deadline, daemon.isRunning else {
                throw TestEnvironmentError("dbus-daemon did not start: \(log("dbus-daemon.log"))")
            }
            usleep(10_000)
        }
    }

    public func log(_ name: String) -> String {
        (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? "(no \(name))"
    }

    deinit {
        daemon.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// python-dbusmock's bluez5 template on a private bus: bluetoothd for the tests.
public final class BlueZMock: @unchecked Sendable {
    public let bus: PrivateBus
    public private(set) var process: ChildProcess
    /// A connection of the test's own, to drive the mock.
    public let control: DBusConnection

    public init(bus: PrivateBus) async throws {
        self.bus = bus
        control = try DBusConnection(address: bus.address)
        process = try Self.spawn(bus)
        try await waitForOwner(present: true)
    }

    private static func spawn(_ bus: PrivateBus) throws -> ChildProcess {
        // Debian's python3 has python3-dbusmock; a python3 earlier on PATH may not.
        try ChildProcess(
            ["/usr/bin/python3", "-m", "dbusmock", "--template", "bluez5"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address],
            output: bus.directory.appendingPathComponent("dbusmock.log").path)
    }

    public func waitForOwner(present: Bool) async throws {
        // Generous: a python3 starting under a loaded CI machine has taken more than 15 s.
        let deadline = Date().addingTimeInterval(45)
        while Date() < deadline {
            let reply = try await control.call(
                destination: DBusDaemon.service, path: DBusDaemon.path,
                interface: DBusDaemon.interface, method: "NameHasOwner",
                arguments: [.string("org.bluez")])
            if reply.first?.bool == present { return }
            if present, !process.isRunning {
                throw TestEnvironmentError("dbusmock exited: \(bus.log("dbusmock.log"))")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestEnvironmentError("org.bluez did not \(present ? "appear" : "vanish"): \(bus.log("dbusmock.log"))")
    }

    /// bluetoothd crashes.
    public func kill() async throws {
        process.kill9()
        try await waitForOwner(present: false)
    }

    /// bluetoothd starts again (with no adapters, as after a crash).
    public func restart() async throws {
        process = try Self.spawn(bus)
        try await waitForOwner(present: true)
    }

    @discardableResult
    public func mock(
        _ method: String, _ arguments: [DBusValue], path: String = "/org/bluez",
        interface: String = "org.bluez.Mock"
    ) async throws -> [DBusValue] {
        try await control.call(
            destination: "org.bluez", path: path, interface: interface, method: method,
            arguments: arguments)
    }

    public func addAdapter(_ name: String = "hci0") async throws {
        try await mock("AddAdapter", [.string(name), .string("kiosk")])
    }

    @discardableResult
    public func addDevice(_ address: String, adapter: String = "hci0", alias: String = "reader") async throws -> String
    {
        try await mock("AddDevice", [.string(adapter), .string(address), .string(alias)]).first?.string ?? ""
    }

    /// Sets a property the way bluetoothd changes it: the mock's Properties.Set emits
    /// PropertiesChanged. Values take BlueZ's real types (see docs/bluez.md).
    public func set(_ path: String, _ interface: String, _ property: String, _ value: DBusValue) async throws {
        try await mock(
            "Set", [.string(interface), .string(property), .variant(value)], path: path,
            interface: DBusProperties.interface)
    }

    /// Runs Python inside the mock in one method call (dbusmock's AddMethod: `objects` maps
    /// paths to mock objects, `dbus` is dbus-python). What it emits leaves in one burst, faster
    /// than one D-Bus call per signal could send it.
    public func run(python code: String) async throws {
        let name = "Run\(UInt64.random(in: 0...UInt64.max))"
        try await mock(
            "AddMethod", [.string("org.accessd.Test"), .string(name), .string(""), .string(""), .string(code)],
            interface: "org.freedesktop.DBus.Mock")
        try await mock(name, [], interface: "org.accessd.Test")
    }

    /// What the client called on an object, as dbusmock recorded it.
    public func calls(_ path: String) async throws -> [String] {
        let reply = try await mock("GetCalls", [], path: path, interface: "org.freedesktop.DBus.Mock")
        guard case .array(_, let items)? = reply.first else { return [] }
        return items.compactMap { item in
            guard case .structure(let fields) = item, fields.count >= 2 else { return nil }
            return fields[1].string
        }
    }

    deinit {
        control.close()
        process.stop()
    }
}
