import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A child process started with posix_spawn and a clean signal mask: children spawned
/// from a Swift concurrency thread otherwise inherit its blocked signals and ignore SIGTERM
/// (docs/bluez.md). `stop` sends SIGTERM, then SIGKILL after a grace period; `deinit`
/// stops it too, so a failing test leaves nothing running.
public final class ChildProcess: @unchecked Sendable {
    public let pid: pid_t
    public let name: String
    private var reaped = false
    private let lock = NSLock()

    /// Starts `arguments[0]` (a full path) with standard input from the file `input`,
    /// standard output appended to the file `output` and standard error to `errors`, or to
    /// `output` when nil (each `/dev/null` when not given). No descriptor of this process is
    /// opened for it: Foundation's Process closed descriptors twice when many tests ran
    /// commands at once (swiftlang/swift#57827), and libdbus then found its new socket
    /// closed under it.
    public init(
        _ arguments: [String], environment: [String: String] = [:],
        input: String? = nil, output: String? = nil, errors: String? = nil
    ) throws {
        name = arguments.first ?? "?"
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, input ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        if let errors {
            posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        } else {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }

        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv + envp { free(pointer) }
        }
        var child: pid_t = 0
        let status = posix_spawn(&child, arguments[0], &actions, &attributes, argv, envp)
        guard status == 0 else {
            throw TestEnvironmentError("cannot start \(arguments[0]): \(String(cString: strerror(status)))")
        }
        pid = child
    }

    public var isRunning: Bool {
        lock.lock()
        defer { lock.unlock() }
        if reaped { return false }
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid {
            reaped = true
            return false
        }
        return true
    }

    /// Waits for the child to exit by itself; its exit status (128 + the signal when a signal
    /// ended it), or nil when it was still running after `timeout` (it is then killed).
    public func waitForExit(timeout: Duration = .seconds(60)) -> Int32? {
        lock.lock()
        defer { lock.unlock() }
        guard !reaped else { return nil }
        let deadline = ContinuousClock.now + timeout
        var status: Int32 = 0
        while ContinuousClock.now < deadline {
            if waitpid(pid, &status, WNOHANG) == pid {
                reaped = true
                return (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        waitpid(pid, &status, 0)
        reaped = true
        return nil
    }

    /// Leaves the child running when this object goes (a daemon the test restarted, as
    /// systemd would, that later scenarios use).
    public func detach() {
        lock.lock()
        reaped = true
        lock.unlock()
    }

    /// SIGTERM, then SIGKILL after `grace`; waits for the child to end. Its exit status as
    /// `waitForExit` gives it: nil when it had to be killed or had already been reaped.
    @discardableResult
    public func stop(grace: TimeInterval = 2) -> Int32? {
        lock.lock()
        let running = !reaped
        if running { kill(pid, SIGTERM) }
        lock.unlock()
        guard running else { return nil }
        return waitForExit(timeout: .milliseconds(Int(grace * 1000)))
    }

    /// SIGKILL at once: bluetoothd crashing.
    public func kill9() {
        lock.lock()
        defer { lock.unlock() }
        guard !reaped else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        reaped = true
    }

    deinit {
        stop(grace: 0.5)
    }
}

public struct TestEnvironmentError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
