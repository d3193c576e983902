import AccessDaemon
import AccessJSON
import BlueZTestSupport
import ControlSocket
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The packaged accessd under the real systemd of the lab VM (`lab --init systemd`):
/// scripts/test passes the `.deb` it built in ACCESSD_DEB. Commands run as root, as an
/// administrator's would.
enum SystemdLab {
    static var deb: String? { ProcessInfo.processInfo.environment["ACCESSD_DEB"] }
    /// Only inside the VM booted with systemd as PID 1, with a package to install.
    static var enabled: Bool {
        deb != nil && FileManager.default.fileExists(atPath: "/run/systemd/system")
            && (try? String(contentsOfFile: "/proc/1/comm", encoding: .utf8))?.hasPrefix("systemd") == true
    }

    static let socket = "/run/accessd/accessd.sock"
    static let config = "/etc/accessd/accessd.toml"
    /// accessd scans on hci1; readers advertise on hci0 (the lab's radio links them).
    static let baseConfig = "[bluetooth]\nadapter = \"hci1\"\n"

    /// A shell command's status and output (stdout and stderr together).
    @discardableResult
    static func sh(_ script: String, timeout: Duration = .seconds(120)) throws -> CommandResult {
        try runCommand(
            ["/bin/sh", "-c", script], mergingErrors: true,
            environment: ["DEBIAN_FRONTEND": "noninteractive"], timeout: timeout)
    }

    /// Like `sh`, failing the check with the output unless the command succeeds.
    @discardableResult
    static func must(_ script: String, timeout: Duration = .seconds(120)) throws -> String {
        let result = try sh(script, timeout: timeout)
        guard result.status == 0 else {
            throw TestEnvironmentError("`\(script)` exited \(result.status):\n\(result.output)")
        }
        return result.output
    }

    /// Installs the drop-in a page of docs/ gives, taken verbatim: the ```ini block after
    /// `opening`, as /etc/systemd/system/accessd.service.d/`name`.conf, then daemon-reload.
    /// Returns the file, for the caller to remove.
    static func installDropIn(fromDoc page: String, after opening: String, as name: String) throws -> String {
        // This file is Tests/AccessDaemonTests/Support/SystemdLab.swift.
        let docs = try String(
            contentsOfFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("docs/\(page)").path, encoding: .utf8)
        guard let start = docs.range(of: opening + "\n\n```ini\n")?.upperBound else {
            throw TestEnvironmentError("the drop-in is no longer in docs/\(page)")
        }
        let dropIn = String(docs[start..<(docs[start...].range(of: "```")?.lowerBound ?? docs.endIndex)])
        let file = "/etc/systemd/system/accessd.service.d/\(name).conf"
        try must(
            "mkdir -p /etc/systemd/system/accessd.service.d && cat > \(file) <<'EOF'\n\(dropIn)EOF\nsystemctl daemon-reload"
        )
        return file
    }

    /// One property of the unit (`systemctl show -p NAME --value accessd`).
    static func property(_ name: String, unit: String = "accessd") throws -> String {
        try must("systemctl show -p \(name) --value \(unit)").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func waitFor(_ what: String, timeout: Duration = .seconds(30), _ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if (try? condition()) == true { return }
            try await Task.sleep(for: .milliseconds(250))
        }
        let journal = (try? sh("journalctl -u accessd -n 40 --no-pager").output) ?? ""
        throw TestEnvironmentError("never: \(what)\n\(journal)")
    }

    static func isRunning() throws -> Bool {
        try property("ActiveState") == "active" && property("SubState") == "running"
    }

    /// A package scripts/package built beside the kiosk's `deb` (`accessd-dbgsym`,
    /// `accessd-tools`): same directory, version and architecture.
    static func package(_ name: String, besides deb: String) -> String {
        let url = URL(fileURLWithPath: deb)
        let file = url.lastPathComponent
        return url.deletingLastPathComponent().appendingPathComponent(name + file.dropFirst("accessd".count)).path
    }

    /// Makes the VM the Debian 12 machine it models. The VM's root is the build machine's,
    /// a container whose `policy-rc.d` forbids packages to start services (Docker's); a
    /// kiosk has none. man-db's trigger re-indexes every man page of the build machine at
    /// each install, minutes under emulation, and is no part of what is tested. Nor is
    /// PackageKit, which the build machine has and a kiosk does not: apt's hook woke it (and
    /// polkit) after every install, up to 4 s each and its start beside the tests. The
    /// Prometheus server the build machine's package starts at boot is not the promtool the
    /// tests use, and took CPU from the emulated machine for the whole boot.
    static func prepareMachine() throws {
        try must(
            """
            rm -f /usr/sbin/policy-rc.d /var/lib/man-db/auto-update &&
            systemctl mask --now packagekit.service >/dev/null 2>&1; systemctl stop prometheus.service 2>/dev/null; true
            """)
    }

    /// apt for the packages scripts/package built, as files: the VM has no network, so its
    /// apt reads no source list (`APT_CONFIG`). With the build machine's lists it spent
    /// 22 s of every call, under emulation, reading them (measured in the lab VM: 24 s with
    /// them, 4 s without, to plan the same install); what it installs is the same.
    @discardableResult
    static func localApt(_ arguments: String) throws -> String {
        let directory = "/run/accessd-local-apt"
        try must(
            """
            mkdir -p \(directory)/sources.list.d && touch \(directory)/sources.list &&
            printf 'Dir::Etc::sourcelist "\(directory)/sources.list";\\nDir::Etc::sourceparts "\(directory)/sources.list.d";\\n' > \(directory)/apt.conf
            """)
        return try must("APT_CONFIG=\(directory)/apt.conf apt-get -q \(arguments)", timeout: .seconds(300))
    }

    /// Installs `deb` as an operator would (dependencies from what is installed) and waits
    /// until the service runs.
    static func install(_ deb: String) async throws {
        try prepareMachine()
        let started = ContinuousClock.now
        let output = try localApt("install -y -o Dpkg::Options::=--force-confold '\(deb)'")
        print("apt-get install took \(ContinuousClock.now - started):\n\(output)")
        do {
            try await waitFor("accessd active after install") { try isRunning() }
        } catch {
            let state = try sh(
                "systemctl is-enabled accessd; systemctl status accessd --no-pager; ls -l /usr/sbin/policy-rc.d"
            ).output
            throw TestEnvironmentError("\(error)\n\(state)")
        }
    }

    /// Installs the package unless it already is, with the lab's configuration.
    static func ensureInstalled() async throws {
        guard let deb else { throw TestEnvironmentError("ACCESSD_DEB is not set") }
        if try sh("dpkg-query -W -f '${Status}' accessd").output.contains("install ok installed") { return }
        try await install(deb)
        try await configure(baseConfig)
    }

    /// Writes the configuration and restarts accessd with it.
    static func configure(_ text: String) async throws {
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        try must("systemctl restart accessd")
        try await waitFor("accessd running after restart") { try isRunning() }
        try await waitForScanning()
    }

    static func call(_ method: String, _ params: JSONValue = [:]) throws -> Result<JSONValue, RPCError> {
        try ControlConnection(path: socket).call(method, params)
    }

    static func waitForScanning() async throws {
        try await waitFor("accessd scanning", timeout: .seconds(40)) {
            try call("status.get").get()["isScanning"]?.bool == true
        }
    }

    /// The journal of accessd since `cursor` (all of it when nil), as text.
    static func journal(since cursor: String? = nil, _ extra: String = "") throws -> String {
        let after = cursor.map { "--after-cursor='\($0)'" } ?? ""
        return try sh("journalctl -u accessd --no-pager -o cat \(after) \(extra)").output
    }

    /// Where the journal ends now, to read only what follows.
    static func cursor() throws -> String {
        let output = try must("journalctl -u accessd -n 1 --show-cursor --no-pager -q")
        return output.split(separator: "\n").last.map { String($0.dropFirst("-- cursor: ".count)) } ?? ""
    }

    /// A site and the front door's reader on the lab radio, heard by the kiosk's adapter at
    /// -60 dBm, for `body`; the site and reader stop afterwards.
    static func withTheFrontDoor<T>(
        directory: String, _ body: (SiteHarness, LabReaders, LabRadio) async throws -> T
    ) async throws -> T {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let radio = LabRadio()
        try radio.send("reset")
        let site = try SiteHarness(directory: directory)
        try await site.serve()
        defer { site.stop() }
        let readers = LabReaders(directory: directory)
        try await readers.startWithRetry(site: site, readers: LabEndToEndTests.frontDoor)
        defer { readers.stop() }
        try radio.rssi("hci1", "hci0", -60)
        return try await body(site, readers, radio)
    }

    /// The front door (`withTheFrontDoor`); a credential registered with the packaged
    /// accessctl as root (an admin), over the packaged unit's socket, without a PIN; then
    /// manual access at the door (again once if the emulated radio lost the attempt, lab
    /// README). Returns the invitation URL and the access command's result.
    static func openTheFrontDoor(directory: String, cardholder: String) async throws -> (String, CommandResult) {
        try await withTheFrontDoor(directory: directory) { site, readers, _ in
            let invitation = try site.invite(cardholder, byName: true).url
            let provisioned = readers.provisionedCount
            let register = try sh("accessctl credentials register '\(invitation)' --no-pin")
            guard register.status == 0 else { throw TestEnvironmentError("register: \(register.output)") }
            try await readers.waitForProvisioning(beyond: provisioned)
            try await waitForTheFrontDoor()
            var access = try sh("accessctl access 2A01")
            if access.status != 0 { access = try sh("accessctl access 2A01") }
            return (invitation, access)
        }
    }

    static func waitForTheFrontDoor() async throws {
        try await waitFor("the reader heard") {
            try call("readers.list").get()["readers"]?.array?.contains { $0["id"] == "00002A01" } == true
        }
    }
}
