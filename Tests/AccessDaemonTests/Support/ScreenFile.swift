import BlueZTestSupport
import Foundation

/// The first line of the file at `path`, past its first `after` lines, that contains `text`,
/// as soon as it is there (a follow mode or a live view writing into a file); throws after
/// `readinessCeiling` with what the file holds.
func waitForLine(in path: String, containing text: String, after: Int = 0) async throws -> String {
    let deadline = ContinuousClock.now + readinessCeiling
    while ContinuousClock.now < deadline {
        let content = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        if let line = content.split(whereSeparator: \.isNewline).dropFirst(after).first(where: { $0.contains(text) }) {
            return String(line)
        }
        try await Task.sleep(for: .milliseconds(20))
    }
    throw TestEnvironmentError(
        "no line with \(text) in \(path) within \(readinessCeiling): \((try? String(contentsOfFile: path, encoding: .utf8)) ?? "")"
    )
}

/// How many lines the file at `path` has now (for `waitForLine(after:)`). A pty ends lines
/// with "\r\n", one `Character` in Swift, so lines are split at any newline.
func lineCount(_ path: String) -> Int {
    ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(whereSeparator: \.isNewline).count
}

/// `accessctl readers --watch` on a terminal, as a person sees it: script(1) gives it a pty
/// whose output goes to `screen`, its keyboard a FIFO held open so it never reads an end of
/// file; a UTF-8 terminal, whatever the test runs under (its symbols are ASCII elsewhere).
final class ReadersWatchOnATerminal {
    let screen: String
    private let socketPath: String
    private let keyboard: Int32
    private let view: ChildProcess

    init(_ harness: DaemonHarness) throws {
        screen = harness.directory + "/screen"
        socketPath = harness.socketPath
        let fifo = harness.directory + "/keyboard"
        guard mkfifo(fifo, 0o600) == 0 else { throw TestEnvironmentError("mkfifo \(fifo): errno \(errno)") }
        keyboard = open(fifo, O_RDWR)
        view = try ChildProcess(
            [
                "/bin/sh", "-c",
                "exec /usr/bin/script -qec \"'\(AccessctlTests.accessctl)' readers --watch --socket '\(harness.socketPath)'\" /dev/null < '\(fifo)' > '\(screen)' 2>&1",
            ], environment: ["LC_ALL": "C.UTF-8"])
    }

    /// The view and script(1) both: the pty's child outlives the shell's exec otherwise.
    func stop() {
        _ = try? runCommand(["/usr/bin/pkill", "-f", "accessctl readers --watch --socket \(socketPath)"])
        _ = view.stop(grace: 1)
        close(keyboard)
    }
}

/// `accessctl events --follow …` through `| cat` into `out`, its stderr into `err`: a
/// script's pipe, where stdio buffering and a restart of accessd once lost lines.
final class EventsFollowThroughAPipe {
    let out: String
    let err: String
    private let socketPath: String
    private let follow: ChildProcess

    init(_ harness: DaemonHarness, _ arguments: String) throws {
        out = harness.directory + "/follow.out"
        err = harness.directory + "/follow.err"
        socketPath = harness.socketPath
        follow = try ChildProcess([
            "/bin/sh", "-c",
            "'\(AccessctlTests.accessctl)' events --follow \(arguments) --socket '\(harness.socketPath)' 2>'\(err)' | cat > '\(out)'",
        ])
    }

    var isRunning: Bool { follow.isRunning }

    /// The shell's children too: a follow outlives accessd by design.
    func stop() {
        _ = try? runCommand(["/usr/bin/pkill", "-f", "accessctl events --follow .*\(socketPath)"])
        _ = follow.stop(grace: 1)
    }
}
