import AccessJSON
import ControlSocket
import Foundation
import NIOConcurrencyHelpers

/// `diagnostics.collect` (issue #34, item 4): the bundle `accessctl diagnose --bundle` writes,
/// gathered for a caller who is not at the kiosk (the MQTT command publishes it). accessd runs
/// the accessctl installed beside it against its own socket, as its own user (an
/// administrator), rather than assembling a second bundle of its own: one program decides
/// what a bundle holds and what stays out of it (no key, PIN, password or token), and the
/// checks are the ones a field engineer's `accessctl diagnose` makes. The child runs within
/// the unit's sandbox, so it sees what accessd sees. One at a time, within `deadline`, and
/// at most `limit` bytes (accessctl leaves out the oldest events to fit).
final class DiagnosticsCollector: Sendable {
    /// The most bytes of a bundle: what the site example's broker takes in one message
    /// (`message_size_limit 65536`, config/mosquitto-accessd.example.conf), so that the MQTT
    /// command's bundle arrives without the broker's limit raised.
    static let limit = 65_536
    static let deadline: Duration = .seconds(30)
    /// What accessctl may write to its standard error that is kept (its failure's sentence).
    static let errorLimit = 4_096

    let socketPath: String
    private let running = NIOLockedValueBox(false)

    init(socketPath: String) {
        self.socketPath = socketPath
    }

    /// accessctl: beside this executable (a build tree, `make install`), else the package's.
    static func accessctl() -> String? {
        var places: [String] = []
        if let own = Bundle.main.executableURL?.resolvingSymlinksInPath() {
            places.append(own.deletingLastPathComponent().appendingPathComponent("accessctl").path)
        }
        places.append("/usr/bin/accessctl")
        return places.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    func collect() async -> Result<JSONValue, RPCError> {
        let admitted = running.withLockedValue { busy in
            defer { busy = true }
            return !busy
        }
        guard admitted else {
            return .failure(
                .failed("diagnostics.busy", "a diagnostics bundle is being gathered; try again when it is done"))
        }
        defer { running.withLockedValue { $0 = false } }
        guard let program = Self.accessctl() else {
            return .failure(.failed("diagnostics.unavailable", "accessctl is not installed beside accessd"))
        }
        let child = Child(
            program: program,
            arguments: [
                "diagnose", "--bundle", "-", "--bundle-limit", String(Self.limit), "--socket", socketPath,
                "--timeout", "5",
            ])
        do {
            try child.start()
        } catch {
            return .failure(.failed("diagnostics.unavailable", "cannot run \(program): \(error)"))
        }
        let deadline = Task {
            try await Task.sleep(for: Self.deadline)
            child.stop()
        }
        defer { deadline.cancel() }
        let run = await withTaskCancellationHandler {
            await child.finish(limit: Self.limit)
        } onCancel: {
            child.stop()
        }
        // Ended because its caller went (a client's hang-up, accessd stopping): not a timeout.
        if Task.isCancelled {
            return .failure(.failed("diagnostics.failed", "the call was cancelled before accessctl diagnose finished"))
        }
        if run.stopped {
            return .failure(.failed("diagnostics.failed", "accessctl diagnose did not finish within \(Self.deadline)"))
        }
        guard run.output.count <= Self.limit else {
            return .failure(.failed("diagnostics.failed", "accessctl diagnose wrote more than \(Self.limit) bytes"))
        }
        guard run.status == 0 else {
            let why = run.errors.trimmingCharacters(in: .whitespacesAndNewlines)
            return .failure(
                .failed(
                    "diagnostics.failed",
                    "accessctl diagnose ended with status \(run.status)\(why.isEmpty ? "" : ": \(why)")"))
        }
        guard let bundle = try? JSONValue.parse(String(decoding: run.output, as: UTF8.self)) else {
            return .failure(.failed("diagnostics.failed", "accessctl diagnose wrote something that is not a bundle"))
        }
        return .success(bundle)
    }

    /// One accessctl run: its output read on a thread of its own (a blocking read), at most
    /// `limit + 1` bytes, then its exit awaited.
    private final class Child: @unchecked Sendable {
        // @unchecked: `process` is configured before `start` and only signalled after it
        // (Process's `terminate` is safe from any thread); `stopped` is behind its lock.
        private let process = Process()
        private let output = Pipe()
        private let errors = Pipe()
        private let stopped = NIOLockedValueBox(false)

        struct Run {
            var output: Data
            var errors: String
            var status: Int32
            var stopped: Bool
        }

        init(program: String, arguments: [String]) {
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = arguments
            // accessd's own systemd handoff is not the child's: with NOTIFY_SOCKET it could
            // speak for the service, with LISTEN_FDS take sockets that are not its own.
            process.environment = ProcessInfo.processInfo.environment.filter {
                !["NOTIFY_SOCKET", "WATCHDOG_PID", "WATCHDOG_USEC", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"]
                    .contains($0.key)
            }
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = output
            process.standardError = errors
        }

        func start() throws {
            try process.run()
        }

        func stop() {
            stopped.withLockedValue { $0 = true }
            if process.isRunning { process.terminate() }
        }

        func finish(limit: Int) async -> Run {
            await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    let read = Self.read(self.output.fileHandleForReading, atMost: limit + 1)
                    // More than the limit: the rest is not read; the child is ended.
                    if read.count > limit { self.stop() }
                    let errors = Self.read(self.errors.fileHandleForReading, atMost: DiagnosticsCollector.errorLimit)
                    self.process.waitUntilExit()
                    continuation.resume(
                        returning: Run(
                            output: read, errors: String(decoding: errors, as: UTF8.self),
                            status: self.process.terminationStatus,
                            stopped: self.stopped.withLockedValue { $0 } && read.count <= limit))
                }
            }
        }

        private static func read(_ handle: FileHandle, atMost limit: Int) -> Data {
            var data = Data()
            while data.count < limit, let chunk = try? handle.read(upToCount: min(65_536, limit - data.count)),
                !chunk.isEmpty
            {
                data.append(chunk)
            }
            return data
        }
    }
}
