import AccessJSON
import ArgumentParser
import BlueZ
import ControlSocket
import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// What a field engineer checks first: is accessd there, may I talk to it, is bluetoothd
/// there, does the kernel see an adapter, is it blocked, are there credentials, is the clock set.
struct Diagnose: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the socket, bluetoothd, adapters, rfkill, credentials, the site and the clock.",
        discussion: "Exit status 0 when everything looks right, 1 when a check failed."
    )
    @OptionGroup var options: GlobalOptions
    @Option(
        help: ArgumentHelp(
            "Also write a diagnostics bundle for support: one JSON file, no secrets (- for standard output).",
            discussion:
                "The checks, status, readers, credentials (fingerprints), the last 500 events, the configuration's settings, the kernel's adapters and rfkill, bluetoothd's version. With -, the bundle is the only thing printed.",
            valueName: "file"), completion: .file()) var bundle: String?
    @Option(
        help: ArgumentHelp(
            "The most bytes the bundle may take: the oldest events, then readers, are left out to fit.",
            valueName: "bytes")) var bundleLimit: Int?

    struct Check {
        var name: String
        var ok: Bool?
        var detail: String
        var hint: String?
    }

    func run() throws {
        if let bundleLimit, bundleLimit < DiagnosticsBundle.smallestLimit {
            throw ValidationError("--bundle-limit is at least \(DiagnosticsBundle.smallestLimit) bytes")
        }
        let checks = collect()
        if let bundle {
            do {
                try DiagnosticsBundle.write(
                    to: bundle, checks: checks, socket: options.socket, configFile: nil,
                    timeout: .milliseconds(Int64((options.timeout ?? 5) * 1000)), limit: bundleLimit)
                // On standard output the bundle is the whole answer (the daemon's
                // `diagnostics.collect` reads it so).
                guard bundle != "-" else { return }
                printError("accessctl: diagnostics bundle written to \(bundle)")
            } catch {
                printError("accessctl: \(error)")
                throw ExitCode(1)
            }
        }
        if options.json {
            // One object, as every command's --json: the checks, and whether all passed.
            print(
                JSONValue.object([
                    "ok": .bool(!checks.contains { $0.ok == false }),
                    "checks": .array(checks.map(DiagnosticsBundle.json)),
                ]).jsonText)
        } else {
            for check in checks {
                let mark = check.ok.map { $0 ? "ok  " : "FAIL" } ?? "?   "
                print(
                    "\(mark)  \(check.name.fitted(to: 18))  \(check.detail)"
                        + (check.ok == false ? (check.hint.map { "  → \($0)" } ?? "") : ""))
            }
        }
        if checks.contains(where: { $0.ok == false }) { throw ExitCode(1) }
    }

    /// Every check, in the order printed.
    private func collect() -> [Check] {
        var checks: [Check] = []
        var status: StatusAnswer?
        var connection: ControlConnection?

        var info = stat()
        if stat(options.socket, &info) != 0 {
            checks.append(
                Check(
                    name: "socket", ok: false, detail: "\(options.socket) does not exist",
                    hint: "is accessd running? systemctl status accessd"))
        } else {
            do {
                let opened = try ControlConnection(path: options.socket)
                opened.answerTimeout = .milliseconds(Int64((options.timeout ?? 5) * 1000))
                status = try opened.call(.statusGet).get().decode(StatusAnswer.self)
                connection = opened
                checks.append(
                    Check(
                        name: "socket", ok: true,
                        detail: "\(options.socket) answers (mode \(String(info.st_mode & 0o777, radix: 8)))"))
            } catch let failure as ControlConnection.Failure {
                if case .cannotConnect(_, let code) = failure, code == EACCES {
                    checks.append(
                        Check(
                            name: "socket", ok: false, detail: "permission denied",
                            hint: "join group accessd, then log in again"))
                } else if case .timedOut = failure {
                    checks.append(
                        Check(
                            name: "socket", ok: false, detail: "\(failure)",
                            hint: "accessd is stopped or hung: systemctl status accessd"))
                } else {
                    checks.append(Check(name: "socket", ok: false, detail: "\(failure)", hint: "is accessd running?"))
                }
            } catch let error as RPCError where error.refusesTheConnection {
                checks.append(
                    Check(
                        name: "socket", ok: false, detail: "accessd refused the connection: \(error.message)",
                        hint: "accessd runs but is busy: which programs hold its socket? ss -xp | grep accessd"))
            } catch {
                checks.append(Check(name: "socket", ok: false, detail: "accessd refused status.get: \(error)"))
            }
        }

        if let status {
            let present = status.bluetoothServicePresent
            checks.append(
                Check(
                    name: "bluetoothd", ok: present, detail: present ? "on the system bus" : "not on the system bus",
                    hint: present ? nil : "systemctl start bluetooth"))
            let states = status.states
            let adapter = status.adapter
            let radioOK =
                adapter != nil && !states.contains("bleErrorDisabled") && !states.contains("bleErrorUnauthorized")
            if adapter == nil, let configured = status.configuredAdapter {
                // Powering on another adapter would not help: accessd uses only the one named.
                checks.append(
                    Check(
                        name: "adapter (accessd)", ok: false,
                        detail: "none: \(configured) is named in [bluetooth] adapter and is not present",
                        hint: "plug it in, or name one of the kernel's adapters below (or remove the line) and reload"))
            } else {
                checks.append(
                    Check(
                        name: "adapter (accessd)", ok: radioOK,
                        detail: adapter.map {
                            "\($0)\(states.contains("bleErrorDisabled") ? ", powered off or blocked" : "")"
                        } ?? "none",
                        hint: radioOK
                            ? nil
                            : adapter == nil
                                // Nothing to power on (issue #35: this said "bluetoothctl power on").
                                ? "no Bluetooth adapter: plug one in (the kernel's view is below)"
                                : "bluetoothctl power on; rfkill unblock bluetooth"))
            }
            if let radio = status.radio, adapter != nil {
                // What the ladder tried, and what only a person can do (issue #38); an adapter
                // that cannot do the job at all says so first.
                let stuck = radio.state == "stuck"
                let hint =
                    radio.unfit != nil
                    ? "use an adapter with Bluetooth LE (4.0 or later): name it in [bluetooth] adapter, "
                        + "or remove that line to take the first fit one"
                    : stuck
                        ? "unplug and replug the adapter, or reboot the kiosk; the steps: "
                            + "journalctl -u accessd ACCESSD_KIND=radio.recovery"
                        : nil
                checks.append(
                    Check(
                        name: "radio", ok: !stuck && radio.unfit == nil, detail: StatusText.radioLine(radio), hint: hint
                    ))
            }
            let credentials = status.credentialCount
            let usable = status.usableCredentialCount
            checks.append(
                Check(
                    name: "credentials", ok: usable > 0, detail: "\(usable) usable of \(credentials)",
                    hint: usable > 0
                        ? nil
                        : (status.secrets?.keyUnavailable ?? 0) > 0
                            ? "a credential's key does not open on this kiosk (keyUnavailable): see `secrets` below"
                            : credentials > 0
                                ? "every credential is suspended or revoked by its site: `accessctl items sync` rechecks"
                                : "accessd holds no credential: register one with `accessctl credentials register URL`")
            )
            if let enrolment = status.enrolment, enrolment.state != .registered {
                checks.append(
                    Check(
                        name: "enrolment", ok: false, detail: StatusText.enrolmentLine(enrolment),
                        hint: enrolment.state == .failed
                            ? "issue a new invitation, put it in the file (owned by accessd, mode 0600), restart accessd"
                            : "accessd keeps trying; check the site's address and this kiosk's network"))
            }
            if states.contains("errorNoSecondFactorSet") {
                // A site that registered a second-factor credential without its key (issue #35:
                // diagnose said ok): no PIN can ever be set on it.
                checks.append(
                    Check(
                        name: "second factor", ok: false,
                        detail: "a credential whose site asks for a second factor has no PIN (errorNoSecondFactorSet)",
                        hint: "readers that require one deny it: delete it (accessctl credentials) and register "
                            + "a new invitation with a PIN"))
            }
            if let secrets = status.secrets {
                let ok = secrets.problem == nil && secrets.keyUnavailable == 0
                checks.append(
                    Check(
                        name: "secrets", ok: ok, detail: StatusText.secretsLine(secrets),
                        hint: ok
                            ? nil
                            : secrets.keyUnavailable > 0
                                ? "a credential's key does not open on this kiosk: `accessctl credentials` says why; "
                                    + "delete it and register again (docs/operations.md, \"Secrets at rest\")"
                                : "see docs/operations.md, \"Secrets at rest\""))
            }
            if let connection, credentials > 0 { checks.append(SiteCheck.check(status, connection: connection)) }
            checks.append(
                Check(
                    name: "scanning", ok: status.isScanning,
                    detail: status.isScanning ? "running" : "not running (states: \(states.joined(separator: ", ")))"))
        }

        do {
            let adapters = try HCIAdapters.list()
            checks.append(
                Check(
                    name: "adapters (kernel)", ok: !adapters.isEmpty,
                    detail: adapters.isEmpty
                        ? "none"
                        : adapters.map { "\($0.name) \($0.address) \($0.isUp ? "up" : "down")" }.joined(
                            separator: ", "),
                    hint: adapters.isEmpty ? "plug in an adapter; dmesg | grep -i bluetooth" : nil))
        } catch {
            checks.append(Check(name: "adapters (kernel)", ok: false, detail: "\(error)"))
        }

        let rfkill = (try? FileManager.default.contentsOfDirectory(atPath: "/sys/class/rfkill")) ?? []
        var blocked: [String] = []
        for entry in rfkill {
            let base = "/sys/class/rfkill/\(entry)/"
            guard (try? String(contentsOfFile: base + "type", encoding: .utf8))?.hasPrefix("bluetooth") == true else {
                continue
            }
            let soft = (try? String(contentsOfFile: base + "soft", encoding: .utf8))?.hasPrefix("1") == true
            let hard = (try? String(contentsOfFile: base + "hard", encoding: .utf8))?.hasPrefix("1") == true
            if soft || hard { blocked.append("\(entry) (\(hard ? "hard" : "soft"))") }
        }
        checks.append(
            Check(
                name: "rfkill", ok: blocked.isEmpty,
                detail: blocked.isEmpty ? "nothing blocked" : "blocked: \(blocked.joined(separator: ", "))",
                hint: blocked.isEmpty ? nil : "rfkill unblock bluetooth"))

        let synchronized = FileManager.default.fileExists(atPath: "/run/systemd/timesync/synchronized")
        checks.append(
            Check(
                name: "clock", ok: synchronized ? true : nil,
                detail: "\(Date()) \(synchronized ? "(synchronized)" : "(synchronization unknown)")",
                hint: synchronized ? nil : "timedatectl status"))

        return checks
    }
}
