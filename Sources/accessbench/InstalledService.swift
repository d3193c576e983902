import ArgumentParser
import BlueZTestSupport
import Foundation

/// The accessd `accessbench readers` measures: its process, its control socket and the
/// dbusmock that stands in for bluetoothd.
protocol MeasuredAccessd: AnyObject {
    var pid: pid_t { get }
    var socketPath: String { get }
    var mock: BlueZMock { get }
    func stop()
}

extension BenchDaemon: MeasuredAccessd {
    var pid: pid_t { process.pid }
}

/// The installed accessd as its systemd unit runs it (its user, sandbox, environment,
/// /etc/accessd and state directory), moved onto a private bus with dbusmock for the run: a
/// drop-in in /run/systemd/system (gone at reboot) starts it with `--bus` and `--config`;
/// `stop()` removes the drop-in and restarts the unit on the system bus, as it was.
final class InstalledService: MeasuredAccessd, @unchecked Sendable {
    let unit: String
    let bus: PrivateBus
    let mock: BlueZMock
    let pid: pid_t
    /// Under the unit's RuntimeDirectory, which accessd may write and root may reach.
    static let socketPath = "/run/accessd/accessd.sock"
    var socketPath: String { Self.socketPath }
    private let directory: URL
    private let dropIn: String

    /// `config`: the configuration's text; `executable`: the accessd the unit is to start.
    init(unit: String, executable: String, config text: String) async throws {
        guard geteuid() == 0 else { throw ValidationError("--unit needs root: it restarts \(unit) with a drop-in") }
        self.unit = unit
        // Not under /tmp: the unit has a private one (PrivateTmp=yes).
        directory = URL(fileURLWithPath: "/run/accessbench-\(getpid())")
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o755])
        bus = try PrivateBus(parent: directory)
        mock = try await BlueZMock(bus: bus)
        try await mock.addAdapter("hci0")
        let config = directory.appendingPathComponent("accessd.toml").path
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        chmod(config, 0o644)
        let dropInDirectory = "/run/systemd/system/\(unit).d"
        dropIn = dropInDirectory + "/accessbench.conf"
        try FileManager.default.createDirectory(atPath: dropInDirectory, withIntermediateDirectories: true)
        try """
        # accessbench readers --unit: accessd on the benchmark's bus; removed when it ends.
        [Service]
        ExecStart=
        ExecStart=\(executable) --config \(config) --socket \(Self.socketPath) --bus \(bus.address)

        """.write(toFile: dropIn, atomically: true, encoding: .utf8)
        do {
            try Self.systemctl("daemon-reload")
            // Type=notify: restart returns when accessd said READY=1.
            try Self.systemctl("restart", unit)
            let mainPID = try Self.systemctl("show", "-p", "MainPID", "--value", unit).trimmingCharacters(
                in: .whitespacesAndNewlines)
            guard let pid = pid_t(mainPID), pid > 0 else {
                throw ValidationError("\(unit) has no main process after its restart")
            }
            self.pid = pid
            try await Self.waitForAnswer(unit)
        } catch {
            Self.restore(unit: unit, dropIn: dropIn, directory: directory)
            throw error
        }
    }

    func stop() {
        Self.restore(unit: unit, dropIn: dropIn, directory: directory)
    }

    private static func waitForAnswer(_ unit: String) async throws {
        for _ in 0..<500 {
            if controlSocketAnswers(socketPath) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw ValidationError("\(unit) did not answer on \(socketPath)")
    }

    /// The unit as it was: its own command line, on the system bus.
    private static func restore(unit: String, dropIn: String, directory: URL) {
        unlink(dropIn)
        _ = try? systemctl("daemon-reload")
        _ = try? systemctl("restart", unit)
        try? FileManager.default.removeItem(at: directory)
    }

    @discardableResult
    static func systemctl(_ arguments: String...) throws -> String {
        let result = try runCommand(["/usr/bin/systemctl"] + arguments, timeout: .seconds(300))
        guard result.status == 0 else {
            throw ValidationError("systemctl \(arguments.joined(separator: " ")): \(result.errors)\(result.output)")
        }
        return result.output
    }
}
