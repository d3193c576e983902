import AccessCore
import AccessJSON
import BlueZTestSupport
import ControlSocket
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Inside the bluez-lab VM (Bumble backend): the real accessd on the system bus's
/// bluetoothd, `readersim readers` on other controllers, a `readersim site` on loopback,
/// and the lab's radio, which sets the RSSI each controller hears from each other.
enum Lab {
    static var isBumble: Bool { ProcessInfo.processInfo.environment["LAB_BACKEND"] == "bumble" }
    static var controllers: Int { Int(ProcessInfo.processInfo.environment["LAB_CONTROLLERS"] ?? "") ?? 0 }

    /// Fails the scenario with the reason when the lab's bluetoothd is gone (an earlier
    /// scenario's restart that did not come back, or a kernel BUG in the Bluetooth stack,
    /// which `dmesg` shows), instead of letting it time out on a missing service.
    /// Removes every device the kiosk's adapter knows, and with it BlueZ's cached GATT
    /// database of each: a scenario starts from no memory of the last one's readers. A
    /// reader that readersim registered again with its service at other handles, under the
    /// same address, otherwise made StartNotify fail ("Failed to register notify session")
    /// on the stale cache in the next scenario (seen after `theNearerOfTwoReadersIsChosen`).
    static func forgetDevices(on adapter: String) {
        guard
            let listing = try? runCommand([
                "/usr/bin/dbus-send", "--system", "--print-reply", "--dest=org.bluez", "/",
                "org.freedesktop.DBus.ObjectManager.GetManagedObjects",
            ]).output
        else { return }
        let prefix = "/org/bluez/\(adapter)/dev_"
        var devices = Set<String>()
        for line in listing.split(separator: "\n") {
            guard let start = line.range(of: "object path \"" + prefix) else { continue }
            let path = line[line.index(start.lowerBound, offsetBy: "object path \"".count)...].prefix { $0 != "\"" }
            if !path.dropFirst(prefix.count).contains("/") { devices.insert(String(path)) }
        }
        for device in devices {
            _ = try? runCommand([
                "/usr/bin/dbus-send", "--system", "--print-reply", "--dest=org.bluez", "/org/bluez/" + adapter,
                "org.bluez.Adapter1.RemoveDevice", "objpath:" + device,
            ])
        }
    }

    static func requireBluetoothd() throws {
        guard !isRunning("bluetoothd") else { return }
        let kernel = (try? runCommand(["/bin/dmesg"]).output) ?? ""
        let lines = kernel.split(separator: "\n")
        let bug = lines.firstIndex {
            $0.contains("kernel BUG") || $0.contains("list_del corruption") || $0.contains("Oops")
        }
        throw TestEnvironmentError(
            "the lab's bluetoothd is not running"
                + (bug.map {
                    "; the kernel reported:\n" + lines[$0..<min(lines.count, $0 + 12)].joined(separator: "\n")
                } ?? ""))
    }

    /// The command line arguments (without the program) of the process called `name`.
    static func runningArguments(_ name: String) -> [String]? {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return nil }
        for entry in entries where entry.allSatisfy(\.isNumber) {
            guard let comm = try? String(contentsOfFile: "/proc/\(entry)/comm", encoding: .utf8),
                comm.trimmingCharacters(in: .whitespacesAndNewlines) == name,
                let raw = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
            else { continue }
            return raw.split(separator: 0).dropFirst().map { String(decoding: $0, as: UTF8.self) }
        }
        return nil
    }

    static func isRunning(_ name: String) -> Bool { runningArguments(name) != nil }

    /// Kills the lab's bluetoothd and starts it again with the arguments it ran with (read
    /// from /proc before killing it), as `systemctl restart bluetooth` would on a real machine.
    static func restartBluetoothd() throws {
        let environment = ProcessInfo.processInfo.environment
        let directory = environment["LAB_OUT"] ?? "/tmp"
        let arguments = runningArguments("bluetoothd").flatMap { $0.isEmpty ? nil : $0 } ?? ["-n", "-E"]
        _ = try runCommand(["/usr/bin/pkill", "-x", "bluetoothd"])
        // The new one can own org.bluez only once the old one is gone ("Name already in use"
        // seen when a loaded machine made the old one take over a second to exit).
        let deadline = Date().addingTimeInterval(20)
        // A zombie has no cmdline: empty arguments are a bluetoothd that has exited.
        while runningArguments("bluetoothd")?.isEmpty == false, Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        Thread.sleep(forTimeInterval: 0.5)
        try ChildProcess(
            ["/usr/libexec/bluetooth/bluetoothd"] + arguments,
            output: directory + "/bluetoothd.restarted.log"
        ).detach()
    }
}

/// Bumble controllers of their own, attached by a second instance of the lab's controller
/// script: stopping it detaches them from the kernel, which is what unplugging a USB
/// adapter does (bluetoothd drops the adapter); starting it again plugs them back in. The
/// kernel gives them the lowest free indexes, so with the lab's three they are hci3, hci4...
/// Every pair on their own radio hears each other at -60 dBm.
final class RemovableControllers: @unchecked Sendable {
    let count: Int
    let directory: String
    private var process: ChildProcess?

    init(count: Int, directory: String) {
        self.count = count
        self.directory = directory
    }

    /// The adapter names they get, given the lab's own controllers.
    var adapters: [String] { (0..<count).map { "hci\(Lab.controllers + $0)" } }

    /// Attaches them and waits until bluetoothd lists every one of them as powered.
    func plugIn() async throws {
        let (python, script) = try Self.bumble()
        let ready = directory + "/removable.ready"
        try? FileManager.default.removeItem(atPath: ready)
        let process = try ChildProcess(
            [
                python, script, "--count", String(count), "--ctl", directory + "/removable.sock",
                "--ready-file", ready, "--address-format", "00:BB:02:{i:02X}:00:{i:02X}",
            ],
            output: directory + "/removable.log")
        self.process = process
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            guard process.isRunning else { throw TestEnvironmentError("the removable controllers exited: \(log)") }
            if FileManager.default.fileExists(atPath: ready), try adapters.allSatisfy(Self.isPowered) { return }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw TestEnvironmentError("\(adapters) did not come up powered in 30 s: \(log)")
    }

    /// Detaches them, as pulling the adapters out would.
    func unplug() {
        process?.stop(grace: 5)
        process = nil
    }

    var log: String { (try? String(contentsOfFile: directory + "/removable.log", encoding: .utf8)) ?? "" }

    /// The lab's Bumble interpreter and controller script, from the lab's run configuration.
    private static func bumble() throws -> (String, String) {
        let out = ProcessInfo.processInfo.environment["LAB_OUT"] ?? ""
        let config = (try? String(contentsOfFile: out + "/config.sh", encoding: .utf8)) ?? ""
        var values: [String: String] = [:]
        for line in config.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 {
                values[String(parts[0])] = String(parts[1]).trimmingCharacters(in: CharacterSet(charactersIn: "'\""))
            }
        }
        guard let python = values["LAB_BUMBLE_PYTHON"], let script = values["LAB_BUMBLE_SCRIPT"] else {
            throw TestEnvironmentError("no LAB_BUMBLE_PYTHON/LAB_BUMBLE_SCRIPT in \(out)/config.sh")
        }
        return (python, script)
    }

    private static func isPowered(_ adapter: String) throws -> Bool {
        try runCommand([
            "/usr/bin/dbus-send", "--system", "--print-reply", "--dest=org.bluez", "/org/bluez/" + adapter,
            "org.freedesktop.DBus.Properties.Get", "string:org.bluez.Adapter1", "string:Powered",
        ])
        .output.contains("boolean true")
    }
}

/// accessd on the lab's system bus, with its own socket and state under `directory`.
final class LabDaemon: @unchecked Sendable {
    let directory: String
    var socketPath: String { directory + "/a.sock" }
    private(set) var process: ChildProcess?

    init(directory: String, config: String) throws {
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // The scenarios walk people away (no reports at all) for seconds at a time: that is
        // no stuck radio, so the ladder is off unless a scenario turns it on.
        try DaemonHarness.withoutRadioRecovery(config).write(
            toFile: directory + "/accessd.toml", atomically: true, encoding: .utf8)
    }

    func start() async throws {
        let process = try ChildProcess(
            [
                DaemonHarness.accessdPath, "--config", directory + "/accessd.toml", "--socket", socketPath,
                "--state-dir", directory + "/state",
            ], output: directory + "/accessd.log")
        self.process = process
        for _ in 0..<1500 {
            if let connection = try? ControlConnection(path: socketPath), (try? connection.call("status.get")) != nil {
                return
            }
            guard process.isRunning else { throw TestEnvironmentError("accessd exited: \(log)") }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestEnvironmentError("accessd did not answer: \(log)")
    }

    var log: String { (try? String(contentsOfFile: directory + "/accessd.log", encoding: .utf8)) ?? "" }

    func connect() throws -> ControlConnection { try ControlConnection(path: socketPath) }

    func call(_ method: String, _ params: JSONValue = [:]) throws -> Result<JSONValue, RPCError> {
        try connect().call(method, params)
    }

    /// Runs the real accessctl against this daemon; returns (status, output).
    func accessctl(_ arguments: [String], input: String? = nil) throws -> (Int32, String) {
        let accessctl = URL(fileURLWithPath: DaemonHarness.accessdPath).deletingLastPathComponent()
            .appendingPathComponent("accessctl").path
        let result = try runCommand(
            [accessctl] + arguments + ["--socket", socketPath], input: input ?? "", mergingErrors: true)
        return (result.status, result.output)
    }

    func stop() -> Int32? {
        guard let process else { return nil }
        self.process = nil
        return process.stop(grace: 10)
    }

    /// SIGKILL: no clean stop, nothing flushed that was not committed.
    func kill() {
        process?.kill9()
        process = nil
    }
}

/// `readersim readers` with a file of readers; its JSON lines, as a test sees them.
final class LabReaders: @unchecked Sendable {
    let directory: String
    private(set) var process: ChildProcess?
    private var outputPath: String { directory + "/readers.out" }

    init(directory: String) {
        self.directory = directory
    }

    /// Starts readersim, again up to twice if it exits at once (bluetoothd not yet back on
    /// the bus after a restart).
    func startWithRetry(site: SiteHarness, readers: String) async throws {
        for attempt in 1...3 {
            do {
                try await start(site: site, readers: readers)
                return
            } catch  where attempt < 3 {
                print("readersim did not come up (attempt \(attempt)): \(error)")
                try await Task.sleep(for: .seconds(2))
            }
        }
    }

    /// Makes the readers' key at `keyFile` and enrols it at `site` (docs/site-api.md §7.1),
    /// for the reader ids the lab's scenarios use (what its version 3 certificates name).
    static func enrolKey(at keyFile: String, site: SiteHarness) throws {
        let made = try JSONValue.parse(try runCommand([SiteHarness.readersimPath, "reader-key", keyFile]).output)
        try site.run([
            "reader", "add", "--name", "lab readers", "--public-key", made["publicKey"]?.string ?? "",
            "--readers", "2A01,2A02,A9E1",
        ])
    }

    /// Provisioned as a third-party reader would be (docs/site-api.md §7): its own key,
    /// enrolled at the site, then the site API.
    func start(site: SiteHarness, readers: String) async throws {
        let keyFile = directory + "/reader.key"
        if !FileManager.default.fileExists(atPath: keyFile) { try Self.enrolKey(at: keyFile, site: site) }
        try "[site]\nurl = \"\(site.url)\"\nkey = \"\(keyFile)\"\n\n\(readers)"
            .write(toFile: directory + "/readers.toml", atomically: true, encoding: .utf8)
        try? FileManager.default.removeItem(atPath: outputPath)
        let process = try ChildProcess(
            [SiteHarness.readersimPath, "readers", "--config", directory + "/readers.toml"],
            output: outputPath)
        self.process = process
        let expected = readers.components(separatedBy: "\n").filter { $0.hasPrefix("[") }.count
        _ = try await waitForLines(timeout: .seconds(20)) { lines in
            lines.filter { $0["event"] == "advertising" }.count >= expected
        }
    }

    func stop() {
        process?.stop(grace: 5)
        process = nil
    }

    var lines: [JSONValue] {
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONValue.parse(String($0)) }
    }

    /// How many provisioning pages changed what the readers know so far.
    var provisionedCount: Int { lines.filter { $0["event"] == "provisioned" }.count }

    /// Waits until a provisioning page after the `count`th has arrived: a change at the site
    /// (a registration, an item) has reached the readers.
    func waitForProvisioning(beyond count: Int) async throws {
        try await waitForLines(timeout: .seconds(15)) { lines in
            lines.filter { $0["event"] == "provisioned" }.count > count
        }
    }

    /// Exchanges the readers reported, oldest first.
    var exchanges: [JSONValue] { lines.filter { $0["event"] == "exchange" } }

    /// Waits until `condition` holds over all lines so far.
    @discardableResult
    func waitForLines(timeout: Duration = .seconds(30), _ condition: ([JSONValue]) -> Bool) async throws -> [JSONValue]
    {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let current = lines
            if condition(current) { return current }
            guard process?.isRunning ?? false else {
                throw TestEnvironmentError(
                    "readersim readers exited: \((try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "")")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestEnvironmentError(
            "readersim never printed what was expected; it printed: \(lines.map(\.jsonText).joined(separator: "\n"))")
    }
}

/// The site every scenario starts from: `readersim site init`, and the readers' key made and
/// enrolled (`reader-key`, `site reader add`), done once per test process and copied into each
/// scenario. Three processes fewer a scenario: under the lab's emulated CPU each took 1 to 9 s
/// (measured: `site init` 2.6–5.7 s of set-ups of 20–37 s).
enum LabSiteTemplate {
    static let directory = "/tmp/lab-site-template-\(getpid())"
    private static let files = ["site.sqlite", "site.sqlite-wal", "reader.key"]

    /// Puts a fresh site's database and the readers' enrolled key in `target`.
    static func copy(into target: String) throws {
        let manager = FileManager.default
        if !manager.fileExists(atPath: directory) {
            let scratch = directory + ".making"
            try? manager.removeItem(atPath: scratch)
            try manager.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            try LabReaders.enrolKey(at: scratch + "/reader.key", site: try SiteHarness(directory: scratch))
            try manager.moveItem(atPath: scratch, toPath: directory)
        }
        for file in files where manager.fileExists(atPath: directory + "/" + file) {
            try manager.copyItem(atPath: directory + "/" + file, toPath: target + "/" + file)
        }
    }
}

/// Everything one lab scenario needs, torn down together.
final class LabScenario: @unchecked Sendable {
    let directory: String
    let site: SiteHarness
    let daemon: LabDaemon
    let readers: LabReaders
    let radio = LabRadio()
    let events: ControlConnection

    /// `adapters`: `[bluetooth] adapters` in place of `adapter` (several kiosk adapters).
    /// `legacyReaders`: the site allows reader protocol versions 1-2 (`--legacy-readers`: its
    /// pages carry the site key), which readers of version 1 or 2 need; without it (as
    /// readersim's site by default) the readers, of version 3 unless told otherwise, sign with
    /// their controller's key under the site's certificate.
    init(
        name: String, adapter: String = "hci1", adapters: [String]? = nil, accessdConfig: String = "",
        readers readerConfig: String, legacyReaders: Bool = false
    ) async throws {
        // Where a scenario's set-up time goes, in its output: under the lab's emulated CPU every
        // process started costs about a second.
        var steps: [String] = []
        var stepStart = ContinuousClock.now
        func step(_ name: String) {
            let now = ContinuousClock.now
            steps.append("\(name) \(tenths(now - stepStart))")
            stepStart = now
        }
        try Lab.requireBluetoothd()
        directory = "/tmp/lab-\(name)-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Out of range until the scenario says otherwise.
        try radio.send("reset")
        try radio.off("*", "*")
        step("radio")
        for each in adapters ?? [adapter] { Lab.forgetDevices(on: each) }
        step("forget")
        try LabSiteTemplate.copy(into: directory)
        site = SiteHarness(existingIn: directory)
        step("site init")
        try await site.serve(extra: legacyReaders ? ["--legacy-readers"] : [])
        step("site serve")
        daemon = try LabDaemon(
            directory: directory + "/accessd",
            config: "[bluetooth]\n"
                + (adapters.map { "adapters = [\($0.map { "\"\($0)\"" }.joined(separator: ", "))]\n" }
                    ?? "adapter = \"\(adapter)\"\n") + accessdConfig)
        try await daemon.start()
        step("accessd")
        events = try daemon.connect()
        _ = try events.call("events.subscribe", [:])
        readers = LabReaders(directory: directory)
        try await readers.start(site: site, readers: readerConfig)
        step("readers")
        print("lab scenario \(name) set up: \(steps.joined(separator: ", "))")
    }

    /// Registers a fresh invitation (optionally with a PIN); returns the credential id.
    /// Returns once the readers have it too (docs/site-api.md §7).
    func register(name: String = "Ada", secondFactor: Bool = false, pin: String? = nil) async throws -> String {
        let started = ContinuousClock.now
        let provisioned = readers.provisionedCount
        var params: [String: JSONValue] = ["url": .string(try site.invite(name, secondFactor: secondFactor).url)]
        let invited = ContinuousClock.now
        if let pin { params["pin"] = .string(pin) }
        let answer = try daemon.call("credentials.register", .object(params)).get()
        guard let id = answer["id"]?.string else { throw TestEnvironmentError("registration gave no id") }
        let registered = ContinuousClock.now
        try await readers.waitForProvisioning(beyond: provisioned)
        print(
            "lab scenario registration: invite \(tenths(invited - started)), register \(tenths(registered - invited)), "
                + "readers provisioned \(tenths(ContinuousClock.now - registered))")
        return id
    }

    /// A manual request (`access.request`, `actions.*`), tried a second time when the first
    /// ends in a link failure: the emulated radio sometimes loses a connection attempt right
    /// after the previous link's teardown (bluez-lab README), as a real one does; a person
    /// would try again. A wrong decision is never retried.
    func manual(_ method: String, _ params: JSONValue) throws -> Result<JSONValue, RPCError> {
        let first = try daemon.call(method, params)
        guard case .failure(let error) = first,
            ["timeout", "readerUnavailable"].contains(error.data?["error"]?.string ?? "")
        else { return first }
        print("\(method): \(error.data?["error"]?.string ?? "?") on the first try; trying again")
        return try daemon.call(method, params)
    }

    /// The next event of `kind` (matching `where`), waiting up to `timeout`.
    func event(
        _ kind: String, timeout: Duration = .seconds(30),
        where predicate: (JSONValue) -> Bool = { _ in true }
    ) throws -> JSONValue? {
        try waitForEvent(events, timeout: timeout) {
            $0["params"]?["kind"]?.string == kind && predicate($0["params"]?["data"] ?? .null)
        }?["params"]?["data"]
    }

    /// Waits until accessd lists the reader (it is heard and parsed).
    func waitForReader(_ id: String, timeout: Duration = .seconds(20)) async throws -> JSONValue {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let readers = try daemon.call("readers.list").get()["readers"]?.array ?? []
            if let reader = readers.first(where: { $0["id"]?.string == id }) { return reader }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw TestEnvironmentError("accessd never heard reader \(id): \(daemon.log)")
    }

    /// accessd stops first, so it drops any link it is opening while the reader still
    /// answers: a connection attempt left to time out against a reader that has gone has
    /// crashed the lab kernel's Bluetooth stack (Linux 6.1, `hci_chan_del`), and every later
    /// scenario with it.
    func tearDown() {
        let started = ContinuousClock.now
        _ = daemon.stop()
        readers.stop()
        site.stop()
        try? radio.off("*", "*")
        keepLogs()
        print("lab scenario torn down in \(tenths(ContinuousClock.now - started))")
    }

    /// Copies the scenario's logs (accessd's, readersim's, the site's) to the lab's output
    /// directory, which outlives the VM: `scripts/test` keeps it when the run fails.
    private func keepLogs() {
        guard let out = ProcessInfo.processInfo.environment["LAB_OUT"] else { return }
        let target = out + "/scenarios/" + URL(fileURLWithPath: directory).lastPathComponent
        try? FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        let files = FileManager.default.enumerator(atPath: directory)?.compactMap { $0 as? String } ?? []
        for file in files where file.hasSuffix(".log") || file.hasSuffix(".out") || file.hasSuffix(".toml") {
            try? FileManager.default.copyItem(
                atPath: directory + "/" + file,
                toPath: target + "/" + file.replacingOccurrences(of: "/", with: "-"))
        }
    }
}

/// A duration as the scenario lines print it: seconds to a tenth ("3.2 secs").
private func tenths(_ duration: Duration) -> String {
    duration.formatted(.units(allowed: [.seconds], fractionalPart: .show(length: 1)))
}
