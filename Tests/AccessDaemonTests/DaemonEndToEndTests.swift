import AccessCore
import AccessJSON
import BlueZ
import BlueZTestSupport
import ControlSocket
import Foundation
import SuiteTraits
import Testing

@testable import AccessDaemon

/// The real accessd binary, a private bus with dbusmock standing in for bluetoothd, and
/// clients on the real socket.
@Suite("accessd end to end", .threadOfItsOwn, .timeLimit(.minutes(5)))
struct DaemonEndToEndTests {
    static let payload = ReaderAdvertisement(
        kind: .gallagherStyle, flags: [.autoConnectEnabled, .manualConnectEnabled], readerID: ReaderID(0x2A01),
        txPower: -59, autoConnectPathLoss: 20, manualConnectPathLoss: 40, siteTag: SiteTag(0x5117_E001)
    ).serviceData

    /// Issue #12: every start journalled bluetoothServiceUnavailable, then the real state, so
    /// anything alerting on sdk.state fired on each restart. With bluetoothd there, the first
    /// state journalled is the real one.
    @Test func theStateAtStartIsJournalledOnceKnown() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        _ = try await harness.waitForStatus { $0["isScanning"]?.bool == true }
        let connection = try harness.connect()
        _ = try connection.call("events.subscribe", ["since": 0]).get()
        var states: [JSONValue] = []
        while states.count < 50, connection.waitReadable(timeout: .milliseconds(500)) {
            let params = try connection.nextNotification()["params"]
            if params?["kind"] == "sdk.state", let data = params?["data"] { states.append(data) }
        }
        #expect(!states.isEmpty)
        #expect(!states.contains { $0["states"]?.array?.contains("bluetoothServiceUnavailable") == true }, "\(states)")
        #expect(harness.stop() == 0)
    }

    @Test func scansAndReportsTheSdkState() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        let status = try await harness.waitForStatus { $0["isScanning"]?.bool == true }
        #expect(status["adapter"]?.string == "hci0")
        #expect(status["states"] == ["errorNoCredentials"])
        #expect(status["scanningEnabled"]?.bool == true)
        #expect(status["automaticAccessEnabled"]?.bool == false)
        #expect(try await harness.mock.calls("/org/bluez/hci0").contains("StartDiscovery"))
        // The adapter powered off: the state says so and scanning stops.
        try await harness.mock.set("/org/bluez/hci0", "org.bluez.Adapter1", "Powered", .bool(false))
        let off = try await harness.waitForStatus { $0["states"]?.array?.contains("bleErrorDisabled") == true }
        #expect(off["isScanning"]?.bool == false)
        #expect(harness.stop() == 0)
    }

    @Test func readerAppearsWithItsAttributes() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        _ = try await harness.waitForStatus { $0["isScanning"]?.bool == true }
        let watcher = try harness.connect()
        _ = try watcher.call("events.subscribe", ["kinds": ["reader.updated"]])
        try await harness.mock.addDevice(DaemonHarness.readerAddress, alias: "Front door")
        try await harness.advertise(payload: Self.payload, rssi: -69)
        let event = try #require(try waitForEvent(watcher) { $0["params"]?["kind"] == "reader.updated" })
        let reader = try #require(event["params"]?["data"])
        #expect(reader["id"] == "00002A01")
        #expect(reader["name"] == "Front door")
        #expect(reader["kind"] == "gallagher")
        #expect(reader["address"] == .string(DaemonHarness.readerAddress))
        #expect(reader["measuredPathLoss"]?.number == 10)
        #expect(reader["distance"] == "near")
        #expect(reader["isInAutoConnectRange"] == true)
        let listed = try harness.connect().call("readers.list").get()
        #expect(listed["readers"]?.array?.count == 1)
        // A malformed advertisement from another device is ignored, not fatal.
        try await harness.mock.addDevice("00:BB:01:00:00:07")
        try await harness.advertise(payload: [0x09, 0x01], rssi: -50, path: "/org/bluez/hci0/dev_00_BB_01_00_00_07")
        #expect(try harness.connect().call("readers.list").get()["readers"]?.array?.count == 1)
        #expect(try await harness.waitForStatus { $0["refusedAdvertisements"]?.int == 1 }["readerCount"] == 1)
        #expect(harness.stop() == 0)
    }

    /// The refused-advertisement count once it has not moved for half a second.
    private func settledRefusals(_ harness: DaemonHarness) async throws -> Int64 {
        var last = try harness.connect().call("status.get").get()["refusedAdvertisements"]?.int ?? 0
        while true {
            try await Task.sleep(for: .milliseconds(500))
            let now = try harness.connect().call("status.get").get()["refusedAdvertisements"]?.int ?? 0
            if now == last { return now }
            last = now
        }
    }

    /// Issue #17: RSSI 127 (HCI's "not available"), 32767 and -32768 were taken as real (the
    /// reader "near", in auto range). Each is now refused and counted before any arithmetic
    /// (so an int64 RSSI cannot overflow the path loss either); a real RSSI afterwards is taken.
    @Test func impossibleRSSIsAreRefusedAndCounted() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        _ = try await harness.waitForStatus { $0["isScanning"]?.bool == true }
        try await harness.mock.addDevice(DaemonHarness.readerAddress)
        // Each setting of RSSI or service data is an advertisement (one or two per advertise):
        // count what was refused once the count has settled.
        var refused: Int64 = 0
        for rssi in [127, 32767, -32768] as [Int16] {
            try await harness.advertise(payload: Self.payload, rssi: rssi)
            _ = try await harness.waitForStatus { ($0["refusedAdvertisements"]?.int ?? 0) > refused }
            refused = try await settledRefusals(harness)
        }
        #expect(try harness.connect().call("readers.list").get()["readers"]?.array?.isEmpty == true)
        try await harness.advertise(payload: Self.payload, rssi: -69)
        #expect(
            try await harness.waitForStatus { $0["readerCount"]?.int == 1 }["refusedAdvertisements"]?.int == refused)
        #expect(harness.daemon?.isRunning == true)
        #expect(harness.stop() == 0)
    }

    @Test func togglesPersistAcrossRestart() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        _ = try await harness.waitForStatus { $0["isScanning"]?.bool == true }
        let client = try harness.connect()
        #expect(try client.call("scanning.set", ["enabled": false]).get() == ["scanningEnabled": false])
        #expect(try client.call("automaticAccess.set", ["enabled": true]).get() == ["automaticAccessEnabled": true])
        _ = try await harness.waitForStatus { $0["isScanning"]?.bool == false }
        #expect(try await harness.waitForCall("StopDiscovery"))
        #expect(harness.stop() == 0)
        try await harness.start()
        let status = try harness.connect().call("status.get").get()
        #expect(status["scanningEnabled"] == false)
        #expect(status["automaticAccessEnabled"] == true)
        #expect(harness.stop() == 0)
    }

    @Test func replayWithSinceLosesNothing() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        _ = try await harness.waitForStatus { $0["isScanning"]?.bool == true }
        let first = try harness.connect()
        _ = try first.call("events.subscribe", ["since": 0])
        var seen: [Int64] = []
        while first.waitReadable(timeout: .milliseconds(300)) {
            if let seq = try first.nextNotification()["params"]?["seq"]?.int { seen.append(seq) }
        }
        #expect(!seen.isEmpty)
        let lastSeen = try #require(seen.last)
        // The client goes away; things happen; it comes back with since.
        try await harness.mock.addDevice(DaemonHarness.readerAddress)
        try await harness.advertise(payload: Self.payload, rssi: -69)
        _ = try await harness.waitForStatus { $0["readerCount"]?.int == 1 }
        try await harness.mock.set("/org/bluez/hci0", "org.bluez.Adapter1", "Powered", .bool(false))
        // The SDK state (discovery's) and the readers (the access engine's) are journalled by
        // two services: wait for both.
        _ = try await harness.waitForStatus {
            $0["states"]?.array?.contains("bleErrorDisabled") == true && $0["readerCount"]?.int == 0
        }
        let second = try harness.connect()
        let answer = try second.call("events.subscribe", ["since": .int(lastSeen)]).get()
        let replayed = try readNotifications(second, count: answer["replayed"]?.int ?? 0)
        let sequences = replayed.compactMap { $0["params"]?["seq"]?.int }
        #expect(answer["replayed"]?.int == Int64(sequences.count))
        #expect(sequences == Array((lastSeen + 1)...(lastSeen + Int64(sequences.count))))
        let kinds = Set(replayed.compactMap { $0["params"]?["kind"]?.string })
        #expect(kinds.isSuperset(of: ["reader.updated", "reader.unavailable", "sdk.state"]))
        #expect(harness.stop() == 0)
    }

    @Test func badInputNeverHurtsTheDaemon() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        let client = try harness.connect()
        try client.sendRaw("{not json\n")
        #expect(try client.readLine().contains("-32700"))
        try client.sendRaw("[1,2]\n")
        #expect(try client.readLine().contains("-32600"))
        try client.sendRaw("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"teleport\"}\n")
        #expect(try client.readLine().contains("-32601"))
        try client.sendRaw("{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"scanning.set\",\"params\":{\"enabled\":3}}\n")
        #expect(try client.readLine().contains("-32602"))
        try client.sendRaw("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"status.get\",\"params\":[1]}\n")
        #expect(try client.readLine().contains("-32602"))
        // A notification (no id) gets no answer; the next request still does.
        try client.sendRaw("{\"jsonrpc\":\"2.0\",\"method\":\"status.get\"}\n")
        #expect(try client.call("status.get").get()["version"] != nil)

        // An endless line: one error, then the daemon hangs up on that client only.
        let flooder = try harness.connect()
        try? flooder.sendRaw(String(repeating: "x", count: ControlServer.maximumLineLength + 10))
        #expect(try flooder.readLine().contains("-32002"))
        #expect(throws: ControlConnection.Failure.self) { _ = try flooder.readLine() }

        // Half a line, then gone.
        do {
            let quitter = try harness.connect()
            try quitter.sendRaw("{\"jsonrpc\":\"2.0\",\"id\":1,\"meth")
        }
        // Random garbage from a fuzzing client.
        var generator = SystemRandomNumberGenerator()
        let fuzzer = try harness.connect()
        for _ in 0..<200 {
            let bytes = (0..<Int.random(in: 1...200, using: &generator)).map { _ in
                UInt8.random(in: 1...255, using: &generator)
            }
            try? fuzzer.sendRaw(String(decoding: bytes, as: UTF8.self) + "\n")
        }
        #expect(try harness.connect().call("status.get").get()["version"] != nil)
        #expect(try client.call("readers.list").get()["readers"] != nil)
        #expect(harness.stop() == 0)
    }

    /// A client that writes its requests and shuts its side down, as `echo … | socat -
    /// UNIX-CONNECT:…` does, still gets every answer. Invalid UTF-8 is a parse error.
    @Test func aHalfClosedClientGetsItsAnswers() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        let client = try harness.connect()
        try client.sendRaw(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status.get\"}\n"
                + "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"readers.list\"}\n")
        try client.sendRaw(
            bytes: Array("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"status.get".utf8) + [0xFF]
                + Array("\"}\n".utf8))
        client.finishSending()
        #expect(try client.readLine().contains("\"id\":1"))
        #expect(try client.readLine().contains("\"readers\""))
        #expect(try client.readLine().contains("-32700"))
        #expect(throws: ControlConnection.Failure.self) { _ = try client.readLine() }
        #expect(harness.stop() == 0)
    }

    @Test func observersAreRefusedOperatorMethods() async throws {
        // The socket's group is nogroup; a client running as nobody is then an observer.
        let harness = try await DaemonHarness(config: "[socket]\ngroup = \"nogroup\"\n")
        try await harness.start()
        chmod(harness.directory, 0o755)
        let accessctl = URL(fileURLWithPath: DaemonHarness.accessdPath).deletingLastPathComponent()
            .appendingPathComponent("accessctl").path
        func asNobody(_ arguments: [String]) throws -> (Int32, String) {
            let result = try runCommand(
                [
                    "/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                    accessctl,
                ] + arguments + ["--socket", harness.socketPath], mergingErrors: true)
            return (result.status, result.output)
        }
        let (statusCode, statusOutput) = try asNobody(["status", "--json"])
        #expect(statusCode == 0, "\(statusOutput)")
        let (scanCode, scanOutput) = try asNobody(["scan", "off"])
        #expect(scanCode == 77, "\(scanOutput)")
        #expect(scanOutput.contains("forbidden"))
        // Root is an admin.
        #expect(try harness.connect().call("scanning.set", ["enabled": true]).get() == ["scanningEnabled": true])
        #expect(harness.stop() == 0)
    }

    /// Roles follow the groups the client's process holds (SO_PEERGROUPS), not only /etc/group:
    /// a process given a group by `setpriv --groups`, `sg` or systemd's `SupplementaryGroups=`
    /// has that group's role, and one that dropped its groups has not.
    @Test func rolesFollowTheGroupsTheClientHolds() async throws {
        // `users` (gid 100) lists no members in /etc/group; nobody is not among them.
        let harness = try await DaemonHarness(config: "[socket]\ngroup = \"nogroup\"\noperator_group = \"users\"\n")
        try await harness.start()
        chmod(harness.directory, 0o755)
        let accessctl = URL(fileURLWithPath: DaemonHarness.accessdPath).deletingLastPathComponent()
            .appendingPathComponent("accessctl").path
        func asNobody(groups: String, _ arguments: [String]) throws -> (Int32, String) {
            let result = try runCommand(
                [
                    "/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--groups=\(groups)",
                    accessctl,
                ] + arguments + ["--socket", harness.socketPath], mergingErrors: true)
            return (result.status, result.output)
        }
        let (heldCode, heldOutput) = try asNobody(groups: "users", ["scan", "off"])
        #expect(heldCode == 0, "\(heldOutput)")
        // Many groups, the role group among them, 0 first (the kernel sorts them).
        let (manyCode, manyOutput) = try asNobody(groups: "0,4,20,24,25,29,30,44,46,100,109,65533", ["scan", "on"])
        #expect(manyCode == 0, "\(manyOutput)")
        let (otherCode, otherOutput) = try asNobody(groups: "4,20", ["scan", "off"])
        #expect(otherCode == 77, "\(otherOutput)")
        #expect(harness.stop() == 0)
    }

    @Test func twoHundredSubscribersAllGetTheEvent() async throws {
        let harness = try await DaemonHarness(config: "[socket]\nmax_clients = 256\n")
        try await harness.start()
        _ = try await harness.waitForStatus { $0["isScanning"]?.bool == true }
        let clients = try (0..<200).map { _ in try harness.connect() }
        for client in clients { _ = try client.call("events.subscribe", ["kinds": ["sdk.state"]]) }
        _ = try harness.connect().call("scanning.set", ["enabled": false])
        // 20 s: only reached on failure; a loaded 2-core machine took over 2 s for the first.
        for client in clients {
            #expect(try waitForEvent(client, timeout: readinessCeiling) { $0["params"]?["kind"] == "sdk.state" } != nil)
        }
        #expect(harness.stop() == 0)
    }

    @Test func aClientThatStopsReadingIsToldWhatItMissed() async throws {
        // Readers must not go stale while 1,500 of them are added on a loaded machine, and the
        // sleeper, whose writes wait from the first full buffer on, must not be dropped for not
        // reading (`send_timeout`, 30 s) before it wakes: adding them took 73 s in one host run.
        let harness = try await DaemonHarness(
            config: "[socket]\nsubscriber_queue = 16\nsend_timeout = 600\n[range]\nstale_timeout = 600\n")
        try await harness.start()
        _ = try await harness.waitForStatus { $0["isScanning"]?.bool == true }
        let sleeper = try harness.connect()
        _ = try sleeper.call("events.subscribe", ["kinds": ["reader.updated"]])
        let reader = try harness.connect()
        _ = try reader.call("events.subscribe", ["kinds": ["reader.updated"]])
        // Many readers appear: each is a reader.updated, far more than the sleeper's queue
        // and its socket buffer hold.
        for index in 0..<1500 {
            let address = String(format: "00:BB:02:%02X:%02X:00", index / 256, index % 256)
            let path = try await harness.mock.addDevice(address)
            var advertisement = try ReaderAdvertisement(serviceData: Self.payload)
            advertisement.readerID = ReaderID(UInt32(index + 1))
            try await harness.advertise(payload: advertisement.serviceData, rssi: -69, path: path)
            // The reading client keeps up.
            while reader.waitReadable(timeout: .zero) { _ = try reader.nextNotification() }
        }
        // The daemon still answers everyone (once the last advertisement has reached it).
        _ = try await harness.waitForStatus { $0["readerCount"] == 1500 }
        #expect(try harness.connect().call("readers.list").get()["readers"]?.array?.count == 1500)
        // The sleeper wakes up: after what fit, it is told exactly what it missed.
        var dropped: JSONValue?
        var received = 0
        // Until the gap is reported (20 s between two: only reached on failure).
        while dropped == nil, sleeper.waitReadable(timeout: .seconds(20)) {
            let notification = try sleeper.nextNotification()
            if notification["method"] == "events.dropped" { dropped = notification["params"] } else { received += 1 }
        }
        let gap = try #require(dropped, "no events.dropped after \(received) events")
        #expect(gap["from"]?.int != nil && gap["to"]!.int! >= gap["from"]!.int!)
        #expect(harness.stop() == 0)
    }

    @Test func sigtermStopsCleanlyAndSigkillLosesNoSequenceNumbers() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        _ = try await harness.waitForStatus { $0["isScanning"]?.bool == true }
        let watcher = try harness.connect()
        _ = try watcher.call("events.subscribe", [:])
        #expect(harness.stop() == 0)
        #expect(!FileManager.default.fileExists(atPath: harness.socketPath))
        try await harness.start()
        // Scanning again first: toggled off before that, it would change no state and journal nothing.
        let before = try await harness.waitForStatus { $0["isScanning"]?.bool == true }["lastSequence"]?.int ?? 0
        #expect(before > 0)
        _ = try harness.connect().call("scanning.set", ["enabled": false])
        let afterToggle = try await harness.waitForStatus { $0["isScanning"]?.bool == false }["lastSequence"]?.int ?? 0
        #expect(afterToggle > before)
        harness.kill()
        try await harness.start()
        // What this start journals (its state, once known) is numbered after what the killed
        // one wrote; subscribing before it is written would replay only the old events.
        _ = try await harness.waitForStatus { ($0["lastSequence"]?.int ?? 0) > afterToggle }
        let events = try harness.connect()
        let answer = try events.call("events.subscribe", ["since": 0]).get()
        let sequences = try readNotifications(events, count: answer["replayed"]?.int ?? 0).compactMap {
            $0["params"]?["seq"]?.int
        }
        #expect(sequences == Array(1...Int64(sequences.count)))
        #expect((sequences.last ?? 0) > afterToggle)
        #expect(harness.stop() == 0)
    }

    @Test func bluetoothdRestartAndScanningResumes() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        _ = try await harness.waitForStatus { $0["isScanning"]?.bool == true }
        try await harness.mock.kill()
        _ = try await harness.waitForStatus { $0["states"]?.array?.contains("bluetoothServiceUnavailable") == true }
        try await harness.mock.restart()
        try await harness.mock.addAdapter("hci0")
        let back = try await harness.waitForStatus { $0["isScanning"]?.bool == true }
        #expect(back["adapter"] == "hci0")
        #expect(harness.stop() == 0)
    }

    @Test func diagnoseReportsWhatItFinds() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        _ = try await harness.waitForStatus { $0["isScanning"]?.bool == true }
        let accessctl = URL(fileURLWithPath: DaemonHarness.accessdPath).deletingLastPathComponent()
            .appendingPathComponent("accessctl").path
        let diagnosis = try runCommand([accessctl, "diagnose", "--json", "--socket", harness.socketPath])
        // No credential yet: a failed check, so exit status 1.
        #expect(diagnosis.status == 1)
        let checks = try JSONValue.parse(diagnosis.output)["checks"]?.array ?? []
        func check(_ name: String) -> JSONValue? { checks.first { $0["check"]?.string == name } }
        #expect(check("socket")?["ok"] == true)
        #expect(check("bluetoothd")?["ok"] == true)
        #expect(check("adapter (accessd)")?["detail"] == "hci0")
        #expect(check("scanning")?["ok"] == true)
        #expect(check("credentials")?["ok"] == false)
        #expect(harness.stop() == 0)
    }

    /// Issue #12: --check-config said OK for a missing ca_file or group, which start (or the
    /// first site call) then refused. Now it checks what start checks, with the same words.
    @Test(arguments: [
        (
            "[site]\nca_file = \"/nonexistent/ca.pem\"\n",
            "[site] ca_file /nonexistent/ca.pem: No such file or directory"
        ),
        ("[site]\nca_file = \"/etc/hostname\"\n", "[site] ca_file /etc/hostname: no PEM certificate in it"),
        ("[socket]\ngroup = \"nosuchgroup\"\n", "[socket] group 'nosuchgroup' does not exist"),
        (
            "[socket]\npath = \"/nonexistent/a.sock\"\n",
            "the socket's directory /nonexistent does not exist ([socket] path)"
        ),
        // Issue #33: start exited 70 (a restart loop under systemd) or took the socket's path.
        (
            "[socket]\npath = \"/tmp/a.sock\"\n[metrics]\nlisten = \"/tmp/a.sock\"\n",
            "[metrics] listen /tmp/a.sock is the control socket's path ([socket] path): name another"
        ),
    ])
    func checkConfigRefusesWhatStartWould(config: String, reason: String) async throws {
        let harness = try await DaemonHarness()
        try harness.writeConfig(config)
        let check = try runCommand(
            [DaemonHarness.accessdPath, "--config", harness.configPath, "--check-config"],
            mergingErrors: true)
        #expect(check.status == 78)
        #expect(check.output.contains("accessd: \(harness.configPath): \(reason)"), "\(check.output)")
    }

    /// Issue #33 (cosmetic): a FIFO, `/dev/zero` or a directory as the configuration said
    /// "cannot read: Success". Each is refused with what it is, and a huge file by its size.
    @Test func aConfigurationThatIsNotARegularFileIsRefusedWithWhatItIs() throws {
        let directory = NSTemporaryDirectory() + "accessd-config-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fifo = directory + "/fifo.toml"
        #expect(mkfifo(fifo, 0o600) == 0)
        let huge = directory + "/huge.toml"
        try Data(repeating: UInt8(ascii: "#"), count: 2 << 20).write(to: URL(fileURLWithPath: huge))
        for (path, reason) in [
            (fifo, "is a FIFO, not a regular file"), ("/dev/zero", "is a device, not a regular file"),
            (directory, "is a directory, not a file"), (huge, "is larger than 1024 KiB: not a configuration file"),
        ] {
            let check = try runCommand(
                [DaemonHarness.accessdPath, "--config", path, "--check-config"], mergingErrors: true,
                timeout: .seconds(10))
            #expect(check.status == 78)
            #expect(check.output == "accessd: \(path): \(reason)\n", "\(check.output)")
        }
    }

    /// Sensitivity names follow the SDK's (veryLow -5 dB, low -2.5, normal 0); the former names,
    /// which ran the other way, are read with a warning naming the line and the new name, and
    /// features that are only synced say so. A warning never refuses the file.
    @Test func formerNamesAndSyncOnlyFeaturesAreWarnedAbout() async throws {
        let harness = try await DaemonHarness()
        try harness.writeConfig("[range]\nsensitivity = \"high\"\n[features]\nenabled = [\"salto\"]\n")
        let check = try runCommand(
            [DaemonHarness.accessdPath, "--config", harness.configPath, "--check-config"],
            mergingErrors: true)
        #expect(check.status == 0, "\(check.output)")
        #expect(
            check.output.contains(
                "accessd: warning: \(harness.configPath):2: [range] sensitivity \"high\" is a former name: "
                    + "write \"veryLow\" (-5.0 dB"), "\(check.output)")
        #expect(
            check.output.contains("\(harness.configPath):4: [features] salto: its items are synced and listed"),
            "\(check.output)")
        #expect(check.output.hasSuffix("\(harness.configPath): OK\n"), "\(check.output)")
        try harness.writeConfig("[range]\nsensitivity = \"low\"\n")
        let quiet = try runCommand(
            [DaemonHarness.accessdPath, "--config", harness.configPath, "--check-config"],
            mergingErrors: true)
        #expect(quiet.output == "\(harness.configPath): OK\n", "\(quiet.output)")
        #expect(
            try ConfigurationLoader.load(path: harness.configPath, mayBeAbsent: false).sensitivity.pathLossOffset
                == -2.5)
    }

    @Test func aBadConfigurationIsRefusedWithItsLine() async throws {
        let harness = try await DaemonHarness()
        try harness.writeConfig("[access]\nconnection_limit = 99\n")
        let check = try runCommand(
            [DaemonHarness.accessdPath, "--config", harness.configPath, "--check-config"],
            mergingErrors: true)
        #expect(check.status == 78)
        #expect(check.output.contains("\(harness.configPath):2: connection_limit must be within 1...8"))
    }
}
