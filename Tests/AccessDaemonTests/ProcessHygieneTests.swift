import AccessJSON
import BlueZTestSupport
import ControlSocket
import Foundation
import SuiteTraits
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The real accessd as a process among others (issue #11): one instance per state
/// directory and socket, SIGHUP reloads, a stale socket replaced.
@Suite(.threadOfItsOwn, .timeLimit(.minutes(5)))
struct ProcessHygieneTests {
    /// accessd's process memory settings (Sources/CProcessMemory; docs/performance.md, "Many
    /// readers"): no transparent huge pages (Debian's kernel uses them "always"), and one
    /// malloc arena, so no thread keeps a heap of its own after a burst.
    @Test func accessdRunsWithoutHugePagesAndWithOneMallocArena() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        defer { _ = harness.stop() }
        // Work on several of accessd's threads at once: clients asking in parallel.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    let connection = try harness.connect()
                    for _ in 0..<50 { _ = try connection.call("status.get") }
                }
            }
            try await group.waitForAll()
        }
        let pid = try #require(harness.daemon?.pid)
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = status.split(separator: "\n").first { $0.hasPrefix("THP_enabled:") }
        // Linux 5.0 and later say it here; this machine and Debian 12 do.
        #expect(line.map { $0.hasSuffix("\t0") } == true, "\(line ?? "no THP_enabled line")")
        // glibc reserves each arena but the first as a 64 MB-aligned 64 MB mapping.
        let maps = try ProcessMaps(pid: pid)
        #expect(Self.mallocHeaps(in: maps) == 0, "\(maps.text)")
    }

    /// Anonymous regions that start on a 64 MB boundary and, with the reserved (---p) part
    /// after them, span 64 MB: glibc's non-main malloc arenas.
    static func mallocHeaps(in maps: ProcessMaps) -> Int {
        let size: UInt64 = 64 << 20
        let regions = maps.regions.filter { $0.path == nil }.map { ($0.start, $0.end, $0.permissions.hasPrefix("rw")) }
        var heaps = 0
        for (index, region) in regions.enumerated() where region.2 && region.0 % size == 0 {
            let end =
                index + 1 < regions.count && regions[index + 1].0 == region.1 && !regions[index + 1].2
                ? regions[index + 1].1 : region.1
            if end - region.0 == size { heaps += 1 }
        }
        return heaps
    }

    /// A second accessd (`sudo accessd` while testing) used to bind over the live socket and
    /// unlink it on exit, cutting the service off from its clients.
    @Test func aSecondAccessdRefusesAndTheFirstKeepsItsSocket() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        let client = try harness.connect()
        // Same socket, other state directory: someone answers there.
        let onSocket = try runCommand(
            [
                DaemonHarness.accessdPath, "--config", harness.configPath, "--socket",
                harness.socketPath, "--state-dir", harness.directory + "/other",
                "--bus", harness.bus.address,
            ], mergingErrors: true)
        #expect(onSocket.status == 75)
        #expect(onSocket.output.contains("another accessd answers on \(harness.socketPath)"))
        // Same state directory, other socket: the lock says who holds it.
        let onState = try runCommand(
            [
                DaemonHarness.accessdPath, "--config", harness.configPath, "--socket",
                harness.directory + "/b.sock", "--state-dir", harness.stateDirectory,
                "--bus", harness.bus.address,
            ], mergingErrors: true)
        #expect(onState.status == 75)
        #expect(onState.output.contains("holds the state directory"))
        #expect(onState.output.contains("(pid "))
        #expect(!FileManager.default.fileExists(atPath: harness.directory + "/b.sock"))
        // The first one still answers on the same connection and on new ones.
        #expect(try client.call("status.get").get()["isScanning"] != nil)
        #expect(try harness.connect().call("status.get").get()["isScanning"] != nil)
        #expect(harness.stop() == 0)
    }

    @Test func aFileInTheWayOfTheSocketIsRefused() async throws {
        let harness = try await DaemonHarness()
        try "not a socket".write(toFile: harness.socketPath, atomically: true, encoding: .utf8)
        let result = try runCommand(
            [
                DaemonHarness.accessdPath, "--config", harness.configPath, "--socket",
                harness.socketPath, "--state-dir", harness.stateDirectory, "--bus", harness.bus.address,
            ], mergingErrors: true)
        #expect(result.status == 75)
        #expect(result.output.contains("exists and is not a socket"))
        #expect(try String(contentsOfFile: harness.socketPath, encoding: .utf8) == "not a socket")
    }

    /// SIGHUP (`systemctl reload`) used to kill accessd silently, as a clean exit; then it
    /// applied only the log level. The range now follows the file at the next advertisement.
    @Test func sighupReloadsWithoutDroppingClients() async throws {
        let harness = try await DaemonHarness(config: "[log]\nlevel = \"info\"\n[range]\nsensitivity = \"normal\"\n")
        try await harness.start()
        _ = try await harness.waitForStatus { $0["isScanning"]?.bool == true }
        // The file as it started: said so, not "applied= needRestart=" (issue #35).
        kill(harness.daemon?.pid ?? 0, SIGHUP)
        try await waitForLog(harness, "configuration reloaded: nothing changed")
        // Outside the journal each line carries its time (issue #35: none did).
        let reloaded = harness.log.split(separator: "\n").first { $0.contains("nothing changed") } ?? ""
        #expect(
            reloaded.range(
                of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4} accessd\[notice\]: configuration reloaded"#,
                options: .regularExpression) != nil, "\(reloaded)")
        let subscriber = try harness.connect()
        _ = try subscriber.call("events.subscribe", [:]).get()
        // Path loss 22 (tx power -59, auto range 20): beyond auto range at normal sensitivity; at veryLow
        // (5 dB less path loss counted) the next one, 21, is well within.
        try await harness.mock.addDevice(DaemonHarness.readerAddress)
        try await harness.advertise(payload: DaemonEndToEndTests.payload, rssi: -81)
        _ = try await harness.waitForStatus { $0["readerCount"]?.int == 1 }
        #expect(try autoRange(harness) == false)
        try harness.writeConfig(
            "[log]\nlevel = \"debug\"\n[range]\nsensitivity = \"veryLow\"\n[access]\nconnection_limit = 2\n")
        kill(harness.daemon?.pid ?? 0, SIGHUP)
        try await waitForLog(harness, "configuration reloaded")
        #expect(harness.log.contains("applied=range.sensitivity,log.level"))
        #expect(
            harness.log.contains("needRestart=access.connection_limit\n"),
            "only what the file changed, not the command line's paths")
        #expect(harness.log.contains("changed settings take effect at the next restart"))
        // Debug lines appear now that the level is debug.
        #expect(!harness.log.contains("client connected"))
        _ = try harness.connect().call("status.get")
        try await waitForLog(harness, "client connected")
        // A reader advertises every 100 ms or so: the range filter's gate wants a few reports
        // near the door before it counts a reader as approached (docs/reader-protocol.md §3).
        for _ in 0..<50 where try autoRange(harness) != true {
            try await harness.advertise(payload: DaemonEndToEndTests.payload, rssi: -80)
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(try autoRange(harness) == true, "the reloaded sensitivity judges the next advertisement")
        // The same file again: only what still waits for a restart, no empty "applied=" (issue #35).
        kill(harness.daemon?.pid ?? 0, SIGHUP)
        try await waitForLog(harness, "configuration reloaded needRestart=access.connection_limit\n")
        #expect(!harness.log.contains("applied= "), "\(harness.log)")
        // A file that does not load is refused whole; the daemon keeps running.
        try harness.writeConfig("[log]\nlevel = \"loud\"\n")
        kill(harness.daemon?.pid ?? 0, SIGHUP)
        try await waitForLog(harness, "reload refused")
        #expect(harness.daemon?.isRunning == true)
        #expect(try subscriber.call("status.get").get()["isScanning"] != nil)
        #expect(harness.stop() == 0)
    }

    /// Issue #17: a missing socket directory or `[socket] group` (which --check-config
    /// accepts) trapped on the HTTP client's shutdown check instead of exiting 78, so
    /// systemd's no-restart rule for 78 never applied and it restarted every 2 s.
    @Test(arguments: [
        ("[log]\nlevel = \"info\"\n", "/missing/a.sock"), ("[socket]\ngroup = \"nosuchgroup\"\n", "/a.sock"),
    ])
    func aStartupErrorExits78WithoutACrash(config: String, socket: String) async throws {
        let harness = try await DaemonHarness(config: config)
        let result = try runCommand(
            [
                DaemonHarness.accessdPath, "--config", harness.configPath, "--socket",
                harness.directory + socket, "--state-dir", harness.stateDirectory,
                "--bus", harness.bus.address,
            ], mergingErrors: true)
        #expect(result.status == 78, "\(result.output)")
        #expect(
            !result.output.contains("Fatal error") && !result.output.contains("Program crashed"), "\(result.output)")
    }

    /// Issue #17: after a SIGKILL the database and its -wal exist, and accessd started on a
    /// read-only state directory (a clean start refuses, as SQLite cannot create its files);
    /// every write then failed. Since the state lock it refused with 75, which systemd retries
    /// as a passing conflict; now it is refused as a clean start is: 73, and why.
    @Test func aReadOnlyStateDirectoryAfterAKillIsRefused() async throws {
        try #require(getuid() == 0, "a read-only bind mount needs root")
        let harness = try await DaemonHarness()
        try await harness.start()
        _ = try harness.connect().call("scanning.set", ["enabled": false]).get()
        harness.kill()
        #expect(FileManager.default.fileExists(atPath: harness.stateDirectory + "/accessd.sqlite-wal"))
        // accessd in a mount namespace of its own, where the state directory is read-only.
        let directory = harness.stateDirectory
        let result = try runCommand(
            [
                "/usr/bin/unshare", "-m", "/bin/sh", "-c",
                "mount --bind -o ro \"$1\" \"$1\" && shift && exec \"$@\"", "sh", directory,
                DaemonHarness.accessdPath, "--config", harness.configPath, "--socket", harness.socketPath,
                "--state-dir", directory, "--bus", harness.bus.address,
            ], mergingErrors: true)
        #expect(result.status == 73, "\(result.output)")
        #expect(result.output.contains("is not writable: Read-only file system"), "\(result.output)")
    }

    /// Issue #17: events during a full disk vanished with only a log line. Now they are held
    /// and written in order once the disk has room, and those past what is held are counted
    /// in one `events.lost` (HeldEventsTests). accessd runs with its state directory on a
    /// 16 MB tmpfs of its own (room for the 4 MB its write-ahead log grows to between
    /// checkpoints); the test fills it and empties it from inside accessd's mount namespace,
    /// while 1,200 readers appear (events that need no write of accessd's own). Some are
    /// still written while it is full, as SQLite reuses its log after a checkpoint.
    @Test func eventsDuringAFullDiskAreHeldThenWritten() async throws {
        try #require(getuid() == 0, "a tmpfs in a mount namespace needs root")
        let harness = try await DaemonHarness(config: "[socket]\nsubscriber_queue = 4096\n")
        let state = harness.stateDirectory
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try await harness.start(wrapper: [
            "/usr/bin/unshare", "-m", "/bin/sh", "-c",
            "mount -t tmpfs -o size=16m,mode=0700 tmpfs \"$1\" && shift && exec \"$@\"", "sh", state,
        ])
        let pid = try #require(harness.daemon?.pid)
        func inAccessdsNamespace(_ script: String) throws {
            let result = try runCommand(
                ["/usr/bin/nsenter", "-t", "\(pid)", "-m", "/bin/sh", "-c", script], mergingErrors: true)
            if result.status != 0 { throw TestEnvironmentError("\(script): \(result.output)") }
        }
        let subscriber = try harness.connect()
        let first = try subscriber.call("events.subscribe", [:]).get()["lastSequence"]?.int ?? 0
        try inAccessdsNamespace("cat /dev/zero > '\(state)/fill' 2>/dev/null; sync; true")
        try await harness.mock.run(python: MockReaders.appear(1200, from: 0))
        try await waitForLog(harness, "cannot journal event")  // the disk is full
        try await Task.sleep(for: .seconds(2))
        try inAccessdsNamespace("rm '\(state)/fill'")
        try await harness.mock.run(python: MockReaders.appear(1, from: 1200))
        // The subscriber gets every event written before the disk filled, the held ones in
        // order, the notice of those not held, then the new one: no gap, no repeat.
        var sequences: [Int64] = []
        var updates = 0
        var lost: Int64?
        while updates + Int(lost ?? 0) < 1201 {
            try #require(
                subscriber.waitReadable(timeout: .seconds(30)),
                "\(updates) updates, then nothing: \(harness.log.split(separator: "\n").filter { !$0.contains("event reader.updated") }.suffix(8).joined(separator: "\n"))"
            )
            let event = try subscriber.nextNotification()
            let params = try #require(event["params"], "\(event)")
            sequences.append(try #require(params["seq"]?.int, "\(event)"))
            if params["kind"] == "reader.updated" { updates += 1 }
            if params["kind"] == "events.lost" { lost = params["data"]?["count"]?.int }
        }
        #expect(sequences == Array(first + 1...first + Int64(sequences.count)), "no gap, no repeat")
        print("full disk: \(updates) reader.updated journaled, \(lost ?? 0) counted in events.lost")
        #expect(harness.log.contains("cannot journal events: holding them until it can"))
        #expect(harness.log.contains("journaling events again held="), "\(harness.log.suffix(1500))")
        // And they are in the journal, for a replay (of these kinds: readers not heard again
        // become unavailable 10 s later).
        let replay = try harness.connect()
        let replayed = try replay.call(
            "events.subscribe", ["since": .int(first), "kinds": ["reader.updated", "events.lost"]]
        ).get()
        #expect(replayed["replayed"]?.int == Int64(updates + (lost == nil ? 0 : 1)))
        #expect(harness.stop() == 0)
    }

    /// systemd's watchdog sends SIGABRT to a hung accessd: the backtrace is printed, then the
    /// process must end (it used to go on, hung, until the SIGKILL ten seconds later).
    @Test func anAbortFromOutsideEndsItAfterTheBacktrace() async throws {
        let harness = try await DaemonHarness()
        // Unsymbolicated: symbolicating a debug build costs seconds of CPU the other suites need.
        try await harness.start(environment: ["SWIFT_BACKTRACE": "enable=yes,symbolicate=off"])
        let daemon = try #require(harness.daemon)
        kill(daemon.pid, SIGABRT)
        #expect(daemon.waitForExit(timeout: .seconds(60)) == 128 + SIGABRT)
        #expect(harness.log.contains("Program crashed: Aborted"))
    }

    /// Clients connecting as accessd stops (a monitor polling `status.get` during `systemctl
    /// stop`): connections accepted but not yet served were dropped with the cancelled accept
    /// loop, and NIO traps on each ("Deinited NIOAsyncWriter without calling finish()",
    /// swift-nio #2813): accessd crashed on SIGTERM instead of exiting 0.
    @Test func connectionsArrivingAtTheStopAreClosedWithoutACrash() async throws {
        let harness = try await DaemonHarness()
        for round in 1...3 {
            try await harness.start(environment: ["SWIFT_BACKTRACE": "enable=yes,symbolicate=off"])
            let daemon = try #require(harness.daemon)
            // Within the socket's backlog (64): every connect succeeds before accessd accepts it.
            let clients = try (0..<48).map { _ in try harness.connect() }
            kill(daemon.pid, SIGTERM)
            let status = daemon.waitForExit(timeout: .seconds(30))
            #expect(
                status == 0, "round \(round): exit \(status.map(String.init) ?? "none")\n\(harness.log.suffix(2000))")
            #expect(!harness.log.contains("Fatal error"), "round \(round)")
            withExtendedLifetime(clients) {}
        }
    }

    private func autoRange(_ harness: DaemonHarness) throws -> Bool? {
        try harness.connect().call("readers.list").get()["readers"]?.array?.first?["isInAutoConnectRange"]?.bool
    }

    private func waitForLog(_ harness: DaemonHarness, _ text: String) async throws {
        for _ in 0..<1000 where !harness.log.contains(text) {
            try await Task.sleep(for: .milliseconds(20))
        }
        if !harness.log.contains(text) { throw TestEnvironmentError("no '\(text)' in the log:\n\(harness.log)") }
    }
}
