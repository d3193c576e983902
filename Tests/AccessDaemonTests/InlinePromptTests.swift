import AccessCore
import AccessJSON
import BlueZTestSupport
import Foundation
import Testing

/// `accessctl access` answers its reader's PIN prompt itself (issue #12, item 4): the real
/// `accessctl` on a real socket, over the daemon's services and the fake central with a reader
/// that asks for a second factor. Before, `access` waited silently until the prompt timed out,
/// and the PIN had to come from a second terminal.
@Suite("accessctl answers a PIN prompt inline", .serialized, .timeLimit(.minutes(5)))
struct InlinePromptTests {
    private func setUp() async throws -> (ShellHarness, String) {
        let shell = try ShellHarness(secondFactor: true)
        try await shell.start()
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration(secondFactor: true)))
        return (shell, try await shell.serveSocket())
    }

    /// With --pin-stdin, a line per attempt: a PIN of the wrong format costs nothing and is
    /// asked again, a wrong one says the attempts left, the right one opens.
    @Test func aPinFromStandardInputIsAnsweredInline() async throws {
        let (shell, socket) = try await setUp()
        let result = try await taskOnThreadOfItsOwn {
            try runCommand(
                [AccessctlTests.accessctl, "access", "2A01", "--pin-stdin", "--socket", socket],
                input: "12\n000000\n\(ShellHarness.pin)\n", mergingErrors: true)
        }.value
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("accessctl: a PIN is 4 to 12 digits"), "\(result.output)")
        #expect(result.output.contains("accessctl: wrong PIN (4 attempts left)"), "\(result.output)")
        #expect(result.output.hasSuffix("granted: granted (access)") == false)
        #expect(result.output.contains("granted: granted (access) in "), "\(result.output)")
        #expect(shell.failedPinAttempts == 0, "the right PIN gives the count back")
        await shell.stop()
    }

    /// On a terminal (a pty, through script(1)): the prompt names the reader and the attempts
    /// left, the PIN is not echoed, the decision follows.
    @Test func aPinTypedAtTheTerminalIsNotEchoed() async throws {
        let (shell, socket) = try await setUp()
        let fifo = shell.directory + "/keyboard"
        let out = shell.directory + "/screen"
        #expect(mkfifo(fifo, 0o600) == 0)
        // Held open for writing by the test (O_RDWR: opening does not wait for the reader).
        let keyboard = open(fifo, O_RDWR)
        defer { close(keyboard) }
        let session = try ChildProcess([
            "/bin/sh", "-c",
            "exec /usr/bin/script -qec \"'\(AccessctlTests.accessctl)' access 2A01 --socket '\(socket)'\" /dev/null < '\(fifo)' > '\(out)' 2>&1",
        ])
        let screen = try await waitForText("attempts left): ", in: out)
        #expect(
            screen.contains("Enter your PIN") || screen.contains("(reader 00002A01, 5 attempts left): "), "\(screen)")
        let typed = "\(ShellHarness.pin)\n"
        _ = typed.withCString { write(keyboard, $0, strlen($0)) }
        let final = try await waitForText("granted", in: out)
        #expect(!final.contains(ShellHarness.pin), "the PIN was echoed: \(final)")
        #expect(try await taskOnThreadOfItsOwn { session.waitForExit(timeout: readinessCeiling) }.value == 0)
        // The screen as docs/operations.md shows it.
        print(
            "$ accessctl access 2A01\n"
                + ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").replacingOccurrences(of: "\r", with: ""))
        await shell.stop()
    }

    /// No terminal and no --pin-stdin: `access` says how to answer and waits; `accessctl pin`
    /// without a request answers the one open prompt (`secondFactor.list`).
    @Test func withoutATerminalThePinComesFromAccessctlPin() async throws {
        let (shell, socket) = try await setUp()
        let out = shell.directory + "/access.out"
        let access = try ChildProcess(
            ["/usr/bin/setsid", "-w", AccessctlTests.accessctl, "access", "2A01", "--socket", socket],
            output: out)
        let told = try await waitForText("accessctl pin sf-", in: out)
        #expect(told.contains("reader 00002A01 asks for a PIN: answer within 30 s with `accessctl pin sf-"), "\(told)")
        let prompts = try await shell.call("secondFactor.list").get()["prompts"]?.array ?? []
        #expect(
            prompts.count == 1 && prompts.first?["reader"] == "00002A01" && prompts.first?["attemptsLeft"] == 5,
            "\(prompts)")
        let pin = try await taskOnThreadOfItsOwn {
            try runCommand(
                ["/usr/bin/setsid", "-w", AccessctlTests.accessctl, "pin", "--pin-stdin", "--socket", socket],
                input: "\(ShellHarness.pin)\n", mergingErrors: true)
        }.value
        #expect(pin.status == 0 && pin.output == "PIN accepted\n", "\(pin.output)")
        #expect(try await taskOnThreadOfItsOwn { access.waitForExit(timeout: readinessCeiling) }.value == 0)
        #expect(try String(contentsOfFile: out, encoding: .utf8).contains("granted: granted (access)"))
        // None open now: said, exit 1.
        let none = try await taskOnThreadOfItsOwn {
            try runCommand(
                [AccessctlTests.accessctl, "pin", "--pin-stdin", "--socket", socket], input: "482916\n",
                mergingErrors: true)
        }.value
        #expect(none.status == 1 && none.output.contains("no second-factor prompt is open"), "\(none.output)")
        await shell.stop()
    }

    /// A person who will not give a PIN: Enter at the prompt (an empty line here) declines it
    /// at once (`secondFactor.cancel`): the reader is told, the access ends `userCancelled`, and
    /// no attempt is spent, where before the reader waited out its 30 s.
    @Test func anEmptyPinDeclinesThePrompt() async throws {
        let (shell, socket) = try await setUp()
        let started = ContinuousClock.now
        let result = try await taskOnThreadOfItsOwn {
            try runCommand(
                [AccessctlTests.accessctl, "access", "2A01", "--pin-stdin", "--socket", socket], input: "\n",
                mergingErrors: true)
        }.value
        #expect(result.status == 1, "\(result.output)")
        #expect(result.output.contains("accessctl: no PIN given: prompt sf-"), "\(result.output)")
        #expect(result.output.contains("access failed: userCancelled"), "\(result.output)")
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(shell.failedPinAttempts == 0)
        let completed = try await shell.waitForEvent("access.completed")
        #expect(completed["error"] == "userCancelled")
        #expect(try shell.events("secondFactor.answered").map { $0["result"] } == ["cancelled"])
        // Nothing open any more: a second cancel is refused.
        let again = await shell.call("secondFactor.cancel", ["request": "sf-1"])
        #expect(again.failureData?["error"] == "secondFactor.noSuchRequest")
        await shell.stop()
    }

    /// Issue #35: after three tries accessctl stopped asking and the prompt stayed open,
    /// silent, until the reader gave up (27 s). Now it is declined at once; the wrong PINs
    /// are counted, and the rest of the attempts stay.
    @Test func threeTriesDeclineThePromptAtOnce() async throws {
        let (shell, socket) = try await setUp()
        let result = try await taskOnThreadOfItsOwn {
            try runCommand(
                [AccessctlTests.accessctl, "access", "2A01", "--pin-stdin", "--socket", socket],
                input: "000000\n111111\n12\n", mergingErrors: true, timeout: readinessCeiling)
        }.value
        #expect(result.status == 1, "\(result.output)")
        #expect(result.output.contains("accessctl: wrong PIN (3 attempts left)"), "\(result.output)")
        #expect(result.output.contains("accessctl: three tries: prompt sf-"), "\(result.output)")
        #expect(result.output.contains("access failed: userCancelled"), "\(result.output)")
        #expect(shell.failedPinAttempts == 2)
        await shell.stop()
    }

    /// Issue #35: a credential whose site asks for a second factor and that has no PIN (a site
    /// registered it without the key) was `ok` in diagnose while every such reader denied it.
    @Test func diagnoseNamesACredentialWithoutItsPIN() async throws {
        let shell = try ShellHarness(secondFactor: true, pinSet: false)
        try await shell.start()
        let socket = try await shell.serveSocket()
        let result = try await taskOnThreadOfItsOwn {
            try runCommand(
                [AccessctlTests.accessctl, "diagnose", "--socket", socket], mergingErrors: true,
                environment: ["LC_ALL": "C.UTF-8"])
        }.value
        let line = result.output.split(separator: "\n").first { $0.contains("second factor") } ?? ""
        #expect(line.hasPrefix("FAIL"), "\(result.output)")
        #expect(line.contains("register a new invitation with a PIN"), "\(result.output)")
        #expect(result.status != 0)
        await shell.stop()
    }
}

/// What a pty session (script(1) into a file) has printed, once it holds `text`.
func waitForText(_ text: String, in path: String) async throws -> String {
    let deadline = ContinuousClock.now + readinessCeiling
    while ContinuousClock.now < deadline {
        let content = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        if content.contains(text) { return content }
        try await Task.sleep(for: .milliseconds(20))
    }
    throw TestEnvironmentError(
        "no '\(text)' in \(path) within \(readinessCeiling): \((try? String(contentsOfFile: path, encoding: .utf8)) ?? "")"
    )
}
