import AccessCore
import AccessJSON
import BlueZTestSupport
import ControlSocket
import Foundation
import SuiteTraits
import Testing

/// `accessctl` as people and scripts use it: follow modes through a pipe, into a file, across
/// a restart of accessd; a stopped accessd (issue #12, items 1, 2 and 7).
@Suite("accessctl against the real accessd", .threadOfItsOwn, .timeLimit(.minutes(5)))
struct AccessctlTests {
    static let accessctl = URL(fileURLWithPath: DaemonHarness.accessdPath).deletingLastPathComponent()
        .appendingPathComponent("accessctl").path

    /// Through `| cat` the lines sat in a 4 KiB stdio buffer (a quiet door's events for
    /// hours), and a restart of accessd ended the follow with exit 69. Now each line is
    /// written as it happens, a restart is waited out, and the follow goes on after the last
    /// event it printed: nothing lost, nothing twice.
    @Test func eventsFollowThroughAPipeSurvivesARestart() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        let control = try harness.connect()
        let since = try control.call("status.get").get()["lastSequence"]?.int ?? 0
        let follow = try EventsFollowThroughAPipe(harness, "--since \(since)")
        defer { follow.stop() }
        let (out, err) = (follow.out, follow.err)
        _ = try control.call("scanning.set", ["enabled": false]).get()
        let beforeRestart = try await waitForLine(in: out, containing: "sdk.state  scanning off")
        #expect(
            beforeRestart.range(
                of: #"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}  \d+  sdk\.state  scanning off; states: "#,
                options: .regularExpression) != nil, "\(beforeRestart)")

        #expect(harness.stop() == 0)
        let linesBefore = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n").count
        try await harness.start()
        _ = try harness.connect().call("scanning.set", ["enabled": true]).get()
        _ = try await waitForLine(in: out, containing: "sdk.state  scanning on", after: linesBefore)
        let messages = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        #expect(messages.contains("accessd closed the connection; reconnecting"), "\(messages)")
        #expect(messages.contains("reconnected; resuming after event"), "\(messages)")
        #expect(follow.isRunning)
        let sequences = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n")
            .compactMap { Int64($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst(2).first ?? "") }
        #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count, "\(sequences)")
        #expect(sequences.first == since + 1)
        print("events --follow across a restart:\n\(try String(contentsOfFile: out, encoding: .utf8))\(messages)")
    }

    /// Into a file, `readers --watch` wrote clear-screen codes. Now a file gets the table
    /// again after a blank line, without codes, as each change happens.
    @Test func readersWatchIntoAFileHasNoTerminalCodes() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        let out = harness.directory + "/watch.out"
        let watch = try ChildProcess(
            [Self.accessctl, "readers", "--watch", "--socket", harness.socketPath], output: out)
        defer { _ = watch.stop(grace: 1) }
        _ = try await waitForLine(in: out, containing: "(no readers heard)")
        try await harness.mock.addDevice(DaemonHarness.readerAddress, alias: "Front door")
        try await harness.advertise(payload: DaemonEndToEndTests.payload, rssi: -69)
        _ = try await waitForLine(in: out, containing: "00002A01")
        let text = try String(contentsOfFile: out, encoding: .utf8)
        #expect(!text.contains("\u{1B}"), "\(text)")
        #expect(text.contains("\n\nID "), "a blank line before each table: \(text)")
    }

    /// With accessd stopped (SIGSTOP), `status` and `diagnose` waited forever. Every call now
    /// has a timeout (`--timeout`, default 5 s): exit 75 and why; diagnose fails its check.
    /// The socket comes from ACCESSD_SOCKET here, as a fleet's scripts would set it.
    @Test func aStoppedAccessdTimesOut() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        let pid = try #require(harness.daemon?.pid)
        kill(pid, SIGSTOP)
        defer { kill(pid, SIGCONT) }
        let started = ContinuousClock.now
        let status = try runCommand(
            ["/usr/bin/env", "ACCESSD_SOCKET=\(harness.socketPath)", Self.accessctl, "status", "--timeout", "1"],
            mergingErrors: true)
        #expect(status.status == 75, "\(status.output)")
        #expect(status.output.contains("accessd did not answer status.get within 1 s"), "\(status.output)")
        let diagnose = try runCommand(
            ["/usr/bin/env", "ACCESSD_SOCKET=\(harness.socketPath)", Self.accessctl, "diagnose", "--timeout", "1"],
            mergingErrors: true)
        #expect(diagnose.status != 0)
        #expect(diagnose.output.contains("accessd did not answer within 1 s"), "\(diagnose.output)")
        #expect(ContinuousClock.now - started < .seconds(10))
        kill(pid, SIGCONT)
        #expect(try harness.connect().call("status.get").get()["isScanning"] != nil, "it goes on once continued")
        // Not checked: after SIGSTOP and SIGCONT, accessd ignored the SIGTERM that followed in
        // about 1 run of 15 (killed after 10 s, nothing logged); left for its own issue.
        _ = harness.stop()
    }

    /// Global options before the subcommand, a suggestion for a typo, kinds checked before
    /// anything is sent, a hint for `actions READER N`; usage errors are 64 (EX_USAGE).
    /// Issue #35: with every place on the socket taken, accessd says so (-32005) before it
    /// hangs up, but accessctl skipped the message (its id is null) and printed "accessd closed
    /// the connection" (exit 69); diagnose asked "is accessd running?". Now both print
    /// accessd's refusal, and the exit status is 75 (try again), as docs/protocol.md says.
    @Test func aFullSocketIsReportedAsBusyNotDead() async throws {
        let harness = try await DaemonHarness(config: "[socket]\nmax_clients = 8\n")
        try await harness.start()
        defer { _ = harness.stop() }
        // Eight connections (root's: operators may take every place), each proven admitted.
        var held: [ControlConnection] = []
        for _ in 0..<8 {
            let connection = try harness.connect()
            _ = try connection.call("status.get").get()
            held.append(connection)
        }
        let status = try runCommand(
            [Self.accessctl, "--socket", harness.socketPath, "status"], mergingErrors: true, timeout: readinessCeiling)
        #expect(status.status == 75, "\(status.output)")
        #expect(
            status.output == "accessctl: accessd refused the connection: too many clients (8); try again later\n",
            "\(status.output)")
        let diagnose = try runCommand(
            [Self.accessctl, "--socket", harness.socketPath, "diagnose"], mergingErrors: true, timeout: readinessCeiling
        )
        #expect(diagnose.output.contains("accessd refused the connection: too many clients (8)"), "\(diagnose.output)")
        #expect(!diagnose.output.contains("is accessd running"), "\(diagnose.output)")
        print("$ accessctl status\n\(status.output)$ accessctl diagnose\n\(diagnose.output)")
        held.removeAll()
    }

    /// Issue #35: `●`, `…` and `→` were printed under `LC_ALL=C`. Outside a UTF-8 locale
    /// accessctl's own symbols are ASCII; under one they stay.
    @Test func symbolsAreASCIIOutsideAUTF8Locale() throws {
        let missing = NSTemporaryDirectory() + "accessd-\(UUID().uuidString).sock"
        let ascii = try runCommand(
            [Self.accessctl, "--socket", missing, "diagnose"], mergingErrors: true, environment: ["LC_ALL": "C"])
        #expect(ascii.output.contains("does not exist  -> is accessd running?"), "\(ascii.output)")
        #expect(!ascii.output.utf8.contains { $0 >= 0x80 }, "\(ascii.output)")
        let utf8 = try runCommand(
            [Self.accessctl, "--socket", missing, "diagnose"], mergingErrors: true, environment: ["LC_ALL": "C.UTF-8"])
        #expect(utf8.output.contains("does not exist  → is accessd running?"), "\(utf8.output)")
    }

    @Test func theGrammarTakesWhatPeopleType() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        let before = try runCommand([Self.accessctl, "--socket", harness.socketPath, "--json", "status"])
        #expect(before.status == 0)
        #expect(before.output.hasPrefix("{") && before.output.contains("\"isScanning\""), "\(before.output)")
        let equals = try runCommand([Self.accessctl, "--timeout=3", "--socket=\(harness.socketPath)", "readers"])
        #expect(equals.status == 0, "\(equals.output)")

        let typo = try runCommand([Self.accessctl, "stauts"], mergingErrors: true)
        #expect(typo.status == 64)
        #expect(typo.output.contains("no command 'stauts'; did you mean 'status'?"), "\(typo.output)")
        let kinds = try runCommand(
            [Self.accessctl, "events", "--kinds", "sdk.stat", "--socket", harness.socketPath],
            mergingErrors: true)
        #expect(kinds.status == 64)
        #expect(kinds.output.contains("no event kind 'sdk.stat'"), "\(kinds.output)")
        let actions = try runCommand([Self.accessctl, "actions", "2A01", "2"], mergingErrors: true)
        #expect(actions.status == 64)
        #expect(actions.output.contains("accessctl action 2A01 2"), "\(actions.output)")

        // A refusal while running is one line, not the top level's usage (issue #35).
        let noTerminal = try runCommand(
            [Self.accessctl, "--socket", harness.socketPath, "credentials", "pin", "abc"], mergingErrors: true)
        #expect(noTerminal.status == 64)
        #expect(
            noTerminal.output == "accessctl: no terminal to ask for the PINs: give --pin-stdin\n",
            "\(noTerminal.output)")

        // Values accessd itself bounds are bad usage too (issue #35: they exited 1).
        for arguments in [["log", "verbose"], ["access", "2A0G"], ["readers", "scope", "2A01", "--offset", "99"]] {
            let refused = try runCommand(
                [Self.accessctl, "--socket", harness.socketPath] + arguments, mergingErrors: true)
            #expect(refused.status == 64, "\(arguments): \(refused.output)")
            #expect(refused.output.hasPrefix("accessctl: "), "\(arguments): \(refused.output)")
        }

        // Any client, not only accessctl, is told a kind it got wrong.
        let refused = try harness.connect().call("events.subscribe", ["kinds": ["sdk.stat"]])
        guard case .failure(let error) = refused else {
            Issue.record("a typo in kinds was accepted")
            return
        }
        #expect(error.code == -32602 && error.message.contains("no event kind \"sdk.stat\""), "\(error.message)")
        #expect(harness.stop() == 0)
    }

    /// docs/protocol.md's first example, run as written (the socket path aside): it printed
    /// nothing while accessd closed a half-closed connection before answering.
    @Test func theSocatExampleWorksVerbatim() async throws {
        let document = try String(contentsOfFile: ControlContractTests.documentPath, encoding: .utf8)
        let example = try #require(
            document.split(separator: "\n").first { $0.hasPrefix("echo ") && $0.contains("| socat - UNIX-CONNECT:") })
        let harness = try await DaemonHarness()
        try await harness.start()
        let command = example.replacingOccurrences(of: "/run/accessd/accessd.sock", with: harness.socketPath)
        let result = try runCommand(["/bin/sh", "-c", command], mergingErrors: true)
        #expect(result.status == 0, "\(result.output)")
        let answer = try JSONValue.parse(result.output.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(answer["id"]?.int == 1 && answer["result"]?["version"] != nil, "\(result.output)")
        #expect(harness.stop() == 0)
    }

    /// `status` in text says what `--json` knows and where a setting comes from: an
    /// operator's `scan off` over the file, an adapter named but missing, the log level, the
    /// configuration file; `diagnose` names the missing adapter instead of `bluetoothctl power on`.
    @Test func statusSaysWhereThingsComeFrom() async throws {
        let harness = try await DaemonHarness(config: "[bluetooth]\nadapter = \"hci9\"\nscanning = true\n")
        try await harness.start()
        _ = try harness.connect().call("scanning.set", ["enabled": false]).get()
        let status = try runCommand([Self.accessctl, "status", "--socket", harness.socketPath])
        #expect(status.status == 0)
        let lines = status.output.split(separator: "\n").map(String.init)
        #expect(
            lines.first?.range(of: #"^accessd \S+, up \d+ s$"#, options: .regularExpression) != nil, "\(status.output)")
        #expect(
            lines.contains(
                "  scanning:          no (wanted: off, set by an operator: kept across restarts, over the file)"),
            "\(status.output)")
        #expect(lines.contains("  automatic access:  off (from the configuration)"), "\(status.output)")
        #expect(
            lines.contains("  adapter:           none: hci9 is configured ([bluetooth] adapter) and not present"),
            "\(status.output)")
        #expect(lines.contains("  features:          ok"), "\(status.output)")
        #expect(lines.contains("  log level:         info"), "\(status.output)")
        #expect(lines.contains("  audit upload:      nothing to send (no credential)"), "\(status.output)")
        #expect(lines.contains("  configuration:     \(harness.configPath)"), "\(status.output)")

        let diagnose = try runCommand([Self.accessctl, "diagnose", "--socket", harness.socketPath])
        #expect(diagnose.status == 1)
        let adapterLine = diagnose.output.split(separator: "\n").first { $0.contains("adapter (accessd)") } ?? ""
        #expect(adapterLine.contains("hci9 is named in [bluetooth] adapter and is not present"), "\(diagnose.output)")
        #expect(!adapterLine.contains("bluetoothctl power on"), "\(diagnose.output)")
        let json = try runCommand([Self.accessctl, "diagnose", "--json", "--socket", harness.socketPath])
        let object = try JSONValue.parse(json.output)
        #expect(object["ok"] == false && object["checks"]?.array?.isEmpty == false, "\(json.output)")
        #expect(harness.stop() == 0)
    }

    /// Issue #35: with no adapter at all, `diagnose` suggested `bluetoothctl power on`.
    @Test func withNoAdapterDiagnoseSaysPlugOneIn() async throws {
        let harness = try await DaemonHarness(adapter: false)
        try await harness.start()
        defer { _ = harness.stop() }
        _ = try await harness.waitForStatus { $0["bluetoothServicePresent"]?.bool == true }
        let diagnose = try runCommand([Self.accessctl, "diagnose", "--socket", harness.socketPath])
        let adapterLine = diagnose.output.split(separator: "\n").first { $0.contains("adapter (accessd)") } ?? ""
        #expect(adapterLine.contains("no Bluetooth adapter: plug one in"), "\(diagnose.output)")
        #expect(!adapterLine.contains("bluetoothctl power on"), "\(diagnose.output)")
    }

    /// `--since` takes a time as people give it (an age, a local time), not only a sequence
    /// number; each event is one line of text with its local time.
    @Test func eventsSinceATime() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        let control = try harness.connect()
        _ = try control.call("scanning.set", ["enabled": false]).get()
        // A local time (to the second) after that event and before the next one.
        let between = Date().addingTimeInterval(1)
        try await Task.sleep(for: .milliseconds(2500))
        let marker = try control.call("status.get").get()["lastSequence"]?.int ?? 0
        _ = try control.call("scanning.set", ["enabled": true]).get()
        _ = try await harness.waitForStatus { ($0["lastSequence"]?.int ?? 0) > marker }

        func events(_ since: String) throws -> [String] {
            let result = try runCommand([
                Self.accessctl, "events", "--since", since, "--kinds", "sdk.state", "--socket", harness.socketPath,
            ])
            #expect(result.status == 0, "\(result.output)")
            return result.output.split(separator: "\n").map(String.init)
        }
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        let recent = try events(formatter.string(from: between))
        #expect(recent.contains { $0.contains("sdk.state  scanning on") }, "\(recent)")
        #expect(!recent.contains { $0.contains("sdk.state  scanning off") }, "\(recent)")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
        #expect(try events(formatter.string(from: between)) == recent)
        let hourAgo = try events("1h")
        #expect(hourAgo.contains { $0.contains("sdk.state  scanning off") }, "\(hourAgo)")
        #expect(hourAgo.count >= recent.count + 1, "\(hourAgo)")

        let subscribed = try harness.connect().call(
            "events.subscribe", ["sinceTime": .double(Date().timeIntervalSince1970 + 60)]
        ).get()
        #expect(subscribed["replayed"] == 0 && subscribed["since"] == subscribed["lastSequence"], "\(subscribed)")
        let bad = try runCommand([Self.accessctl, "events", "--since", "yesterday"], mergingErrors: true)
        #expect(bad.status == 64 && bad.output.contains("--since: a sequence number (1200), an age"), "\(bad.output)")
        // A date that does not exist is not carried into the next month.
        for impossible in ["2026-02-30", "2026-11-23 24:00", "2026-11-23 8:00", "2026-13-01"] {
            let refused = try runCommand([Self.accessctl, "events", "--since", impossible], mergingErrors: true)
            #expect(refused.status == 64, "\(impossible): \(refused.output)")
        }
        #expect(harness.stop() == 0)
    }

    /// On a terminal (a pty through script(1), as a person sees it), `readers --watch` is a
    /// live view: accessd's state on top, each reader's path loss on a scale with its auto (A)
    /// and manual (M) thresholds, the range named, when it was last heard; redrawn as it moves.
    @Test func readersWatchOnATerminalIsALiveView() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        _ = try await harness.waitForStatus { $0["isScanning"]?.bool == true }
        let view = try ReadersWatchOnATerminal(harness)
        defer { view.stop() }
        let screen = view.screen
        _ = try await waitForLine(in: screen, containing: "(no readers heard)")
        try await harness.mock.addDevice(DaemonHarness.readerAddress, alias: "Front door")
        // tx −59 dBm at −90 dBm: 31 dB, between the reader's auto (20) and manual (40) thresholds.
        try await harness.advertise(payload: DaemonEndToEndTests.payload, rssi: -90)
        let row = try await waitForLine(in: screen, containing: "00002A01 Front door")
        #expect(
            row.range(
                of: #"00002A01 Front door +31\.0 dB  =+A-+●-*M\.+  manual  \S+ +\d+\.\d s"#,
                options: .regularExpression) != nil, "\(row)")
        let text = try String(contentsOfFile: screen, encoding: .utf8)
        #expect(text.contains("scanning on   adapter hci0"), "\(text)")
        #expect(text.contains("\u{1B}[H\u{1B}[2J"), "redrawn in place on a terminal")
        #expect(text.contains("LAST ACCESSES"), "\(text)")
        // Nearer: in auto range, and the dot moves left of A.
        try await harness.advertise(payload: DaemonEndToEndTests.payload, rssi: -65)
        let near = try await waitForLine(in: screen, containing: "  auto  ")
        #expect(
            near.range(of: #"00002A01 Front door +\d+\.\d dB  =*●=*A-+M\.+  auto "#, options: .regularExpression)
                != nil,
            "\(near)")
        #expect(harness.stop() == 0)
    }

    /// Bash completion, through the script the package installs: reader ids are asked of
    /// the running accessd (the socket the line names), event kinds and log levels are fixed,
    /// and with accessd gone nothing hangs and nothing is offered for readers.
    @Test func completionsAskAccessdForLiveObjects() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        try await harness.mock.addDevice(DaemonHarness.readerAddress, alias: "Front door")
        try await harness.advertise(payload: DaemonEndToEndTests.payload, rssi: -69)
        _ = try await harness.waitForStatus { $0["readerCount"] == 1 }
        let directory = URL(fileURLWithPath: Self.accessctl).deletingLastPathComponent().path
        func complete(_ line: String) throws -> String {
            let words = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            let script = """
                source <(accessctl --generate-completion-script bash)
                COMP_WORDS=(\(words.map { "'\($0)'" }.joined(separator: " ")))
                COMP_CWORD=\(words.count - 1); COMP_LINE='\(line)'; COMP_POINT=${#COMP_LINE}
                _accessctl accessctl '\(words.last ?? "")' '\(words.dropLast().last ?? "")'
                echo "${COMPREPLY[*]}"
                """
            let result = try runCommand(
                ["/bin/bash", "-c", script], environment: ["PATH": "\(directory):/usr/bin:/bin"])
            return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try complete("accessctl access --socket \(harness.socketPath) 2A") == "2A01")
        #expect(try complete("accessctl events --kinds sdk.state,reader.up") == "sdk.state,reader.updated")
        #expect(try complete("accessctl log war") == "warning")
        #expect(harness.stop() == 0)
        let started = ContinuousClock.now
        #expect(try complete("accessctl access --socket \(harness.socketPath) 2A") == "")
        #expect(ContinuousClock.now - started < .seconds(5))
    }
}
