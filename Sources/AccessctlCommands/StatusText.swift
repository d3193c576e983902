import ControlSocket

/// `accessctl status` for people: everything `--json` knows that a person acts on, each
/// line saying where a value comes from when that is the question (an operator's `scan off`
/// outliving `scanning = true` in the file; a named adapter that is missing).
enum StatusText {
    static func lines(_ status: StatusAnswer) -> [String] {
        let package = status.package.map { $0 == status.version ? "" : " (package \($0))" } ?? ""
        var lines = ["accessd \(status.version)\(package), up \(duration(status.uptimeSeconds))"]
        func row(_ label: String, _ value: String) { lines.append("  " + (label + ":").padding(19) + value) }
        let scanningSource = source(status.scanningSetBy).map { ", " + $0 } ?? ""
        row(
            "scanning",
            "\(status.isScanning ? "yes" : "no") (wanted: \(onOff(status.scanningEnabled))\(scanningSource))")
        row(
            "automatic access",
            onOff(status.automaticAccessEnabled) + (source(status.automaticAccessSetBy).map { " (\($0))" } ?? ""))
        if let adapter = status.adapter {
            row("adapter", adapter)
        } else if let configured = status.configuredAdapter {
            row("adapter", "none: \(configured) is configured ([bluetooth] adapter) and not present")
        } else if let listed = status.radio?.adapters, !listed.isEmpty, listed.allSatisfy({ $0.role == .absent }) {
            row("adapter", "none: \(listed.map(\.name).joined(separator: ", ")) ([bluetooth] adapters) not present")
        } else {
            row("adapter", "none")
        }
        if let listed = status.radio?.adapters, listed.count > 1 { row("adapters", adaptersLine(listed)) }
        if let radio = status.radio { row("radio", radioLine(radio)) }
        row("bluetoothd", status.bluetoothServicePresent ? "present" : "absent")
        row("states", status.states.isEmpty ? "ok" : status.states.joined(separator: ", "))
        row(
            "features",
            status.featureErrors.isEmpty
                ? "ok"
                : "failing: \(status.featureErrors.joined(separator: ", ")) (the site; accessctl events --kinds feature.state)"
        )
        var readers = "\(status.readerCount)"
        if status.refusedAdvertisements > 0 {
            readers +=
                " (\(status.refusedAdvertisements) advertisements refused since start: unreadable or impossible RSSI)"
        }
        row("readers heard", readers)
        row(
            "credentials",
            status.usableCredentialCount == status.credentialCount
                ? "\(status.credentialCount)"
                : "\(status.usableCredentialCount) usable of \(status.credentialCount) (accessctl credentials list)")
        if let audit = status.audit { row("audit upload", auditLine(audit)) }
        for site in status.audit?.sites ?? [] where site.state != .current {
            lines.append("    " + siteLine(site))
        }
        if let mqtt = status.mqtt { row("mqtt", mqttLine(mqtt)) }
        if let secrets = status.secrets { row("secrets", secretsLine(secrets)) }
        if let enrolment = status.enrolment { row("enrolment", enrolmentLine(enrolment)) }
        row("last event", "\(status.lastSequence)")
        if let level = status.logLevel { row("log level", level) }
        row("configuration", status.configFile ?? "built-in defaults (no file)")
        return lines
    }

    /// `current`, or how many events wait and where.
    /// The invitation file's registration (docs/fleet.md, "Enrolling a hundred kiosks").
    static func enrolmentLine(_ enrolment: EnrolmentStatus) -> String {
        let why = [enrolment.error, enrolment.message].compactMap { $0 }.joined(separator: ": ")
        switch enrolment.state {
        case .registered: return "registered credential \(enrolment.credential ?? "?") from \(enrolment.file)"
        case .retrying:
            let retry = enrolment.retryInSeconds.map { "again in \($0) s" } ?? "again later"
            return "NOT YET: \(enrolment.file): \(why); trying \(retry)"
        case .failed: return "FAILED: \(enrolment.file) refused (\(why)); kept as \(enrolment.file).failed"
        default: return "\(enrolment.state.rawValue): \(enrolment.file)"
        }
    }

    static func auditLine(_ audit: AuditStatus) -> String {
        guard audit.enabled else { return "off ([site] audit_upload)" }
        if audit.sites.isEmpty { return "nothing to send (no credential)" }
        let failing = audit.sites.filter { $0.state != .current }.count
        if audit.backlog == 0 && failing == 0 { return "current" }
        let waiting = "\(audit.backlog) event\(audit.backlog == 1 ? "" : "s") waiting"
        return failing == 0
            ? waiting + " (sending)" : waiting + " (\(failing) of \(audit.sites.count) sites not taking them)"
    }

    /// `listening`, `listening (recovered twice: restartDiscovery 1, powerCycle 1)`, or
    /// `STUCK: …` with what was tried (docs/bluez.md, "A radio that stops hearing").
    /// "hci1 in use, hci2 standby": every adapter accessd may use, in preference order.
    static func adaptersLine(_ adapters: [AdapterRole]) -> String {
        adapters.map { adapter in
            switch adapter.role {
            case .inUse: "\(adapter.name) in use"
            case .quarantined:
                "\(adapter.name) quarantined (heard nothing"
                    + (adapter.quarantineSeconds.map { "; taken again in \($0) s at the earliest)" } ?? ")")
            case .off: "\(adapter.name) powered off"
            default: "\(adapter.name) \(adapter.role.rawValue)"
            }
        }.joined(separator: ", ")
    }

    static func radioLine(_ radio: RadioStatus) -> String {
        let recovered = radio.recoveries.filter { $0.result == "recovered" }
        let tried = radio.recoveries.map { "\($0.rung) \($0.result) \($0.count)" }.joined(separator: ", ")
        if let unfit = radio.unfit { return "NOT USABLE: \(unfit)" }
        switch radio.state {
        case "stuck":
            let retry = radio.retryInSeconds.map { "; next power cycle in \($0) s" } ?? ""
            return "STUCK: hears nothing after a restart of discovery and a power cycle (\(tried))\(retry)"
        case "listening", "idle":
            guard !recovered.isEmpty else { return radio.state }
            return "\(radio.state) (recoveries since start: \(tried))"
        default:
            return "recovering: \(radio.state)" + (tried.isEmpty ? "" : " (\(tried))")
        }
    }

    /// `sealed to this machine (tpm2), 0 keys unavailable`, or what is weaker and why.
    static func secretsLine(_ secrets: SecretsStatus) -> String {
        let unavailable = "\(secrets.keyUnavailable) key\(secrets.keyUnavailable == 1 ? "" : "s") unavailable"
        if let problem = secrets.problem { return "\(problem); \(unavailable)" }
        if secrets.sealedToMachine { return "sealed to this machine (\(secrets.protection)), \(unavailable)" }
        return "NOT sealed to this machine: key file \(secrets.keyOrigin ?? "?"), \(unavailable)"
    }

    /// `connected to mqtt://broker:1883 as accessd/kiosk-1, current`, or why not and what waits.
    static func mqttLine(_ mqtt: MQTTStatus) -> String {
        let waiting = mqtt.backlog == 0 ? "current" : "\(mqtt.backlog) event\(mqtt.backlog == 1 ? "" : "s") waiting"
        switch mqtt.state {
        case .connected: return "connected to \(mqtt.broker) as \(mqtt.topic), \(waiting)"
        case .connecting: return "connecting to \(mqtt.broker) (\(mqtt.error ?? "starting")), \(waiting)"
        case .failing: return "failing: \(mqtt.error ?? "the broker refused us") (\(mqtt.broker)), \(waiting)"
        }
    }

    private static func siteLine(_ site: AuditSiteStatus) -> String {
        var line = "\(site.site): \(site.backlog) waiting; "
        switch site.state {
        case .current: line += "sending"
        case .failing: line += site.error ?? "failing"
        case .unsupported: line += "the site takes no audit events (site API §4.5); they stay in the journal"
        }
        if let retry = site.retryInSeconds { line += "; again in \(StatusText.duration(Int64(retry)))" }
        return line
    }

    private static func source(_ setBy: String?) -> String? {
        switch setBy {
        case "operator": "set by an operator: kept across restarts, over the file"
        case "configuration": "from the configuration"
        default: nil
        }
    }

    /// `2 d 3 h`, `4 h 12 min`, `7 min`, `12 s`: the two largest units.
    static func duration(_ seconds: Int64) -> String {
        let days = seconds / 86_400
        let hours = seconds % 86_400 / 3_600
        let minutes = seconds % 3_600 / 60
        if days > 0 { return "\(days) d \(hours) h" }
        if hours > 0 { return "\(hours) h \(minutes) min" }
        if minutes > 0 { return "\(minutes) min" }
        return "\(seconds) s"
    }
}

extension String {
    /// Left-aligned in `width` columns, with at least one space after.
    func padding(_ width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
