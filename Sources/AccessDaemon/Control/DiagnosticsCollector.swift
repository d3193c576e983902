import AccessCore
import AccessJSON
import ControlSocket
import FoundationEssentials
import NIOConcurrencyHelpers
import Subprocess
import SystemPackage

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
        if let own = InstalledPackage.running, let slash = own.lastIndex(of: "/") {
            places.append(own[..<slash] + "/accessctl")
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
        let arguments = [
            "diagnose", "--bundle", "-", "--bundle-limit", String(Self.limit), "--socket", socketPath, "--timeout", "5",
        ]
        let run: Run
        do {
            run = try await Self.run(program, arguments)
        } catch {
            return .failure(error)
        }
        guard run.status == 0 else {
            let why = run.errors.trimmingWhitespace()
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

    private struct Run {
        var output: [UInt8]
        var errors: String
        var status: Int32
    }

    /// One accessctl run within `deadline`, its output at most `limit` bytes. Ended (SIGTERM,
    /// then SIGKILL a second later) when the deadline passes or the caller goes.
    private static func run(_ program: String, _ arguments: [String]) async throws(RPCError) -> Run {
        // accessd's own systemd handoff is not the child's: with NOTIFY_SOCKET it could
        // speak for the service, with LISTEN_FDS take sockets that are not its own.
        let handoff = ["NOTIFY_SOCKET", "WATCHDOG_PID", "WATCHDOG_USEC", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"]
        let environment = Environment.inherit.updating(
            Dictionary(uniqueKeysWithValues: handoff.map { (Environment.Key(stringLiteral: $0), String?.none) }))
        let options = {
            var options = PlatformOptions()
            options.teardownSequence = [.gracefulShutDown(allowedDurationToNextStep: .seconds(1))]
            return options
        }()
        let outcome = await withTaskGroup(of: Result<Run, RPCError>?.self) { group in
            group.addTask {
                do {
                    let result = try await Subprocess.run(
                        .path(FilePath(program)), arguments: Arguments(arguments), environment: environment,
                        platformOptions: options, output: .bytes(limit: limit), error: .string(limit: errorLimit))
                    let status: Int32 =
                        switch result.terminationStatus {
                        case .exited(let code): code
                        case .signaled(let signal): 128 + signal
                        }
                    return .success(Run(output: result.standardOutput, errors: result.standardError, status: status))
                } catch let error as SubprocessError where error.code == .outputLimitExceeded {
                    // swift-subprocess does not say which of the two outputs went over.
                    return .failure(
                        .failed(
                            "diagnostics.failed",
                            "accessctl diagnose wrote more than \(limit) bytes, or more than \(errorLimit) of errors"))
                } catch {
                    // Ended because its caller went (a client's hang-up, accessd stopping) or the
                    // deadline passed: the group says which.
                    if Task.isCancelled { return nil }
                    return .failure(.failed("diagnostics.unavailable", "cannot run \(program): \(error)"))
                }
            }
            group.addTask {
                try? await Task.sleep(for: deadline)
                if Task.isCancelled { return nil }
                return .failure(.failed("diagnostics.failed", "accessctl diagnose did not finish within \(deadline)"))
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        // nil: ended because its caller went (a client's hang-up, accessd stopping).
        guard let outcome, !Task.isCancelled else {
            throw .failed("diagnostics.failed", "the call was cancelled before accessctl diagnose finished")
        }
        return try outcome.get()
    }
}
