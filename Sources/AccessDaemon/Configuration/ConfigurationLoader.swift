import AccessCore
import Foundation

/// Reads accessd.toml. Refuses what it does not understand (unknown sections and keys,
/// wrong types, out-of-range values) with the file, the line and the reason, so a typo is
/// found at start and not at the first door.
public enum ConfigurationLoader {
    /// Loads `path`; a missing file means the built-in defaults when `mayBeAbsent`.
    public static func load(path: String, mayBeAbsent: Bool) throws(ConfigurationError) -> AccessdConfiguration {
        guard FileManager.default.fileExists(atPath: path) else {
            if mayBeAbsent { return AccessdConfiguration() }
            throw ConfigurationError(file: path, line: nil, reason: "no such file")
        }
        guard let bytes = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(file: path, line: nil, reason: "cannot read: \(String(cString: strerror(errno)))")
        }
        return try parse(bytes: Array(bytes), file: path)
    }

    /// A file's bytes: UTF-8 (a bad byte is refused with its line), then `parse`.
    public static func parse(bytes: [UInt8], file: String) throws(ConfigurationError) -> AccessdConfiguration {
        let text: String
        do {
            text = try ConfigurationSyntax.text(of: bytes)
        } catch {
            throw ConfigurationError(file: file, line: error.line, reason: error.reason)
        }
        return try parse(text, file: file)
    }

    public static func parse(_ text: String, file: String) throws(ConfigurationError) -> AccessdConfiguration {
        let document: ConfigurationSyntax.Document
        do {
            document = try ConfigurationSyntax.parse(text)
        } catch {
            throw ConfigurationError(file: file, line: error.line, reason: error.reason)
        }
        var reader = Reader(document: document, file: file)
        return try reader.read()
    }

    private struct Reader {
        let document: ConfigurationSyntax.Document
        let file: String

        func fail(_ section: String, _ key: String?, _ reason: String) -> ConfigurationError {
            let line = key.flatMap { document.sections[section]?[$0]?.line } ?? document.sectionLines[section]
            return ConfigurationError(file: file, line: line, reason: reason)
        }

        mutating func read() throws(ConfigurationError) -> AccessdConfiguration {
            let sections: [String: [String]] = [
                "bluetooth": ["adapter", "scanning", "discovery_watchdog"],
                "access": [
                    "automatic", "connection_limit", "manual_timeout", "cooldown", "selection_window", "connect_early",
                    "hold_time",
                    "max_retries", "step_timeout", "second_factor_timeout", "open_next_expiry",
                ],
                "range": [
                    "filter", "median_window", "sensitivity", "smoothing", "approach_smoothing", "exit_margin",
                    "expiry_delay", "stale_timeout",
                ],
                "features": ["enabled"],
                "prompts": ["second_factor"],
                "socket": [
                    "path", "group", "operator_group", "admin_group", "subscriber_queue", "max_clients", "idle_timeout",
                    "send_timeout",
                ],
                "store": ["state_directory", "journal_max_events", "journal_max_age_days"],
                "site": [
                    "ca_file", "request_timeout", "sync_interval", "device_name", "pin_attempts", "max_offline",
                    "audit_upload",
                ],
                "log": ["level"],
                "readers": ["allow", "deny"],
                "button": ["device", "key"],
                "metrics": ["listen"],
                "mqtt": [
                    "url", "topic_prefix", "client_id", "username", "password_file", "ca_file", "cert_file", "key_file",
                    "qos", "home_assistant", "discovery_prefix", "commands",
                ],
            ]
            if let stray = document.sections[""]?.min(by: { $0.value.line < $1.value.line }) {
                throw ConfigurationError(
                    file: file, line: stray.value.line,
                    reason:
                        "unknown section or key '\(stray.key)' (every setting belongs in a section: \(sections.keys.sorted().joined(separator: ", ")))"
                )
            }
            for (name, keys) in document.sections where !name.isEmpty {
                let known = name.hasPrefix(Self.readerTablePrefix) ? Self.readerRuleKeys : sections[name]
                guard let known else {
                    throw ConfigurationError(
                        file: file, line: document.sectionLines[name],
                        reason:
                            "unknown section or key '\(name)' (sections: \(sections.keys.sorted().joined(separator: ", ")))"
                    )
                }
                for (key, entry) in keys where !known.contains(key) {
                    throw ConfigurationError(
                        file: file, line: entry.line,
                        reason: "unknown key '\(key)' in [\(name)] (known: \(known.joined(separator: ", ")))")
                }
            }
            var c = AccessdConfiguration()
            if let v = try string("bluetooth", "adapter") {
                guard v.hasPrefix("hci"), Int(v.dropFirst(3)) != nil else {
                    throw fail("bluetooth", "adapter", "adapter must look like hci0")
                }
                c.adapter = v
            }
            c.scanningOnStart = try bool("bluetooth", "scanning") ?? c.scanningOnStart
            c.discoveryWatchdog = try seconds("bluetooth", "discovery_watchdog", 5...3600) ?? c.discoveryWatchdog
            c.automaticAccessOnStart = try bool("access", "automatic") ?? c.automaticAccessOnStart
            c.connectionLimit = try int("access", "connection_limit", 1...8) ?? c.connectionLimit
            c.manualTimeout = try seconds("access", "manual_timeout", 1...120) ?? c.manualTimeout
            c.cooldown = try seconds("access", "cooldown", 0...600) ?? c.cooldown
            c.selectionWindow = try seconds("access", "selection_window", 0...5) ?? c.selectionWindow
            c.connectEarly = try bool("access", "connect_early") ?? c.connectEarly
            c.holdTime = try seconds("access", "hold_time", 1...300) ?? c.holdTime
            c.maximumRetries = try int("access", "max_retries", 0...10) ?? c.maximumRetries
            c.stepTimeout = try seconds("access", "step_timeout", 1...60) ?? c.stepTimeout
            c.secondFactorTimeout = try seconds("access", "second_factor_timeout", 5...300) ?? c.secondFactorTimeout
            c.openNextExpiry = try seconds("access", "open_next_expiry", 1...60) ?? c.openNextExpiry
            if let v = try string("range", "filter") {
                guard let filter = RangeFilter(rawValue: v) else {
                    throw fail("range", "filter", "filter must be trend_gated or median_average")
                }
                c.rangeFilter = filter
            }
            c.medianWindow = try int("range", "median_window", 1...5) ?? c.medianWindow
            if let v = try string("range", "sensitivity") {
                guard let s = ConnectionSensitivity(rawValue: v) ?? ConnectionSensitivity.formerNames[v] else {
                    throw fail(
                        "range", "sensitivity", "sensitivity must be veryLow (-5 dB), low (-2.5 dB) or normal (0 dB)")
                }
                c.sensitivity = s
            }
            c.smoothingFactor = try double("range", "smoothing", 0.01...1) ?? c.smoothingFactor
            c.approachSmoothingFactor = try double("range", "approach_smoothing", 0.01...1) ?? c.approachSmoothingFactor
            c.autoRangeExitMargin = try double("range", "exit_margin", 0...30) ?? c.autoRangeExitMargin
            c.expiryDelay = try seconds("range", "expiry_delay", 0...120) ?? c.expiryDelay
            c.staleTimeout = try seconds("range", "stale_timeout", 1...600) ?? c.staleTimeout
            if let features = value("features", "enabled") {
                guard case .array(let array) = features else {
                    throw fail("features", "enabled", "enabled must be a list of strings")
                }
                var set: Set<String> = []
                for item in array {
                    guard case .string(let name) = item, AccessdConfiguration.supportedFeatures.contains(name) else {
                        throw fail(
                            "features", "enabled",
                            "features are \(AccessdConfiguration.supportedFeatures.sorted().joined(separator: ", "))")
                    }
                    set.insert(name)
                }
                c.features = set
            }
            if let prompt = try string("prompts", "second_factor") {
                guard (1...256).contains(prompt.utf8.count) else {
                    throw fail("prompts", "second_factor", "second_factor must be 1 to 256 bytes")
                }
                c.secondFactorPrompt = prompt
            }
            if let path = try string("socket", "path") {
                guard path.hasPrefix("/"), path.utf8.count < 108 else {
                    throw fail("socket", "path", "path must be absolute and shorter than 108 bytes")
                }
                c.socketPath = path
            }
            c.socketGroup = try string("socket", "group") ?? c.socketGroup
            c.operatorGroup = try string("socket", "operator_group") ?? c.operatorGroup
            c.adminGroup = try string("socket", "admin_group") ?? c.adminGroup
            c.subscriberQueueLimit = try int("socket", "subscriber_queue", 16...1_000_000) ?? c.subscriberQueueLimit
            c.maximumClients = try int("socket", "max_clients", 8...4096) ?? c.maximumClients
            c.clientIdleTimeout = try seconds("socket", "idle_timeout", 1...86400) ?? c.clientIdleTimeout
            c.clientSendTimeout = try seconds("socket", "send_timeout", 1...3600) ?? c.clientSendTimeout
            if let directory = try string("store", "state_directory") {
                guard directory.hasPrefix("/") else {
                    throw fail("store", "state_directory", "state_directory must be absolute")
                }
                c.stateDirectory = directory
            }
            c.journalMaxEvents = try int("store", "journal_max_events", 100...100_000_000) ?? c.journalMaxEvents
            if let days = try int("store", "journal_max_age_days", 1...3650) {
                c.journalMaxAge = .seconds(days * 86400)
            }
            if let caFile = try string("site", "ca_file") {
                guard caFile.hasPrefix("/") else { throw fail("site", "ca_file", "ca_file must be an absolute path") }
                c.siteCAFile = caFile
            }
            c.siteRequestTimeout = try seconds("site", "request_timeout", 1...120) ?? c.siteRequestTimeout
            c.siteSyncInterval = try seconds("site", "sync_interval", 10...86400) ?? c.siteSyncInterval
            if let name = try string("site", "device_name") {
                guard (1...128).contains(name.utf8.count) else {
                    throw fail("site", "device_name", "device_name must be 1 to 128 bytes")
                }
                c.deviceName = name
            }
            c.pinAttempts = try int("site", "pin_attempts", 1...20) ?? c.pinAttempts
            if let limit = try int("site", "max_offline", 0...31_536_000) {
                guard limit == 0 || limit >= 60 else {
                    throw fail("site", "max_offline", "max_offline is 0 (no limit) or 60...31536000 seconds")
                }
                c.maxOffline = limit == 0 ? nil : .seconds(limit)
            }
            c.auditUpload = try bool("site", "audit_upload") ?? c.auditUpload
            if let v = try string("log", "level") {
                guard let level = AccessdConfiguration.LogLevel(rawValue: v) else {
                    throw fail(
                        "log", "level",
                        "level must be one of \(AccessdConfiguration.LogLevel.allCases.map(\.rawValue).joined(separator: ", "))"
                    )
                }
                c.logLevel = level
            }
            if let device = try string("button", "device"), !device.isEmpty {
                guard device.hasPrefix("/"), device.utf8.count < 4096 else {
                    throw fail("button", "device", "device must be an absolute path (/dev/input/...)")
                }
                c.buttonDevice = device
            }
            if let key = try string("button", "key") {
                guard let code = InputKeyCode(key) else {
                    throw fail(
                        "button", "key", "key must be a key name such as KEY_ENTER or BTN_0, or its code (1...767)")
                }
                c.buttonKey = code
            }
            c.readerRules = try readerRules()
            c.mqtt = try mqtt()
            if let listen = try string("metrics", "listen") {
                switch MetricsEndpoint.parse(listen) {
                case .success(let endpoint): c.metricsListen = endpoint
                case .failure(let problem): throw fail("metrics", "listen", problem.reason)
                }
            }
            return c
        }

        /// `[mqtt]`: nil unless `url` is set (docs/fleet.md).
        func mqtt() throws(ConfigurationError) -> MQTTConfiguration? {
            guard let url = try string("mqtt", "url") else {
                if let key = document.sections["mqtt"]?.keys.sorted().first {
                    throw fail("mqtt", key, "[mqtt] needs url = \"mqtt://HOST:PORT\" for its other settings to apply")
                }
                return nil
            }
            let parsed: (host: String, port: Int32, tls: Bool)
            switch MQTTConfiguration.parseURL(url) {
            case .success(let value): parsed = value
            case .failure(let problem): throw fail("mqtt", "url", problem.reason)
            }
            var m = MQTTConfiguration(host: parsed.host, port: parsed.port, tls: parsed.tls)
            if let prefix = try string("mqtt", "topic_prefix") {
                if let problem = MQTTConfiguration.topicLevelProblem(prefix, allowingSlash: true) {
                    throw fail("mqtt", "topic_prefix", "topic_prefix \(problem)")
                }
                m.topicPrefix = prefix
            }
            if let id = try string("mqtt", "client_id") {
                if let problem = MQTTConfiguration.topicLevelProblem(id, allowingSlash: false) {
                    throw fail("mqtt", "client_id", "client_id \(problem)")
                }
                m.clientID = id
            }
            m.username = try string("mqtt", "username")
            for (key, path) in [
                ("password_file", \MQTTConfiguration.passwordFile), ("ca_file", \.caFile),
                ("cert_file", \.certFile), ("key_file", \.keyFile),
            ] {
                guard let file = try string("mqtt", key) else { continue }
                guard file.hasPrefix("/") else { throw fail("mqtt", key, "\(key) must be an absolute path") }
                m[keyPath: path] = file
            }
            if m.passwordFile != nil && m.username == nil {
                throw fail("mqtt", "password_file", "password_file needs username")
            }
            if (m.certFile == nil) != (m.keyFile == nil) {
                throw fail("mqtt", m.certFile == nil ? "key_file" : "cert_file", "cert_file and key_file go together")
            }
            if (m.caFile != nil || m.certFile != nil) && !m.tls {
                throw fail("mqtt", "url", "ca_file, cert_file and key_file need an mqtts:// url")
            }
            m.qos = Int32(try int("mqtt", "qos", 0...1) ?? 1)
            m.homeAssistant = try bool("mqtt", "home_assistant") ?? false
            m.commands = try bool("mqtt", "commands") ?? false
            if m.commands && !(m.tls && (m.username != nil || m.certFile != nil)) {
                throw fail(
                    "mqtt", "commands",
                    "commands need an mqtts:// url and a username or a client certificate: "
                        + "whoever can publish to the command topic acts as an operator")
            }
            if let prefix = try string("mqtt", "discovery_prefix") {
                if let problem = MQTTConfiguration.topicLevelProblem(prefix, allowingSlash: true) {
                    throw fail("mqtt", "discovery_prefix", "discovery_prefix \(problem)")
                }
                m.discoveryPrefix = prefix
            }
            return m
        }

        static let readerTablePrefix = "reader."
        static let readerRuleKeys = ["path_loss_offset", "automatic", "manual"]

        /// `[readers] allow/deny` and a `[reader.ID]` table per reader (ReaderScope).
        func readerRules() throws(ConfigurationError) -> [ReaderID: ReaderScope.Rule] {
            var rules: [ReaderID: ReaderScope.Rule] = [:]
            var lines: [ReaderID: (String, String?)] = [:]
            func id(_ text: String, _ section: String, _ key: String?) throws(ConfigurationError) -> ReaderID {
                guard let id = ReaderID(text) else {
                    throw fail(
                        section, key,
                        "'\(text.prefix(32))' is not a reader id (up to eight hex digits, as accessctl readers prints them)"
                    )
                }
                return id
            }
            for (key, listing) in [("allow", ReaderScope.Rule.Listing.allowed), ("deny", .denied)] {
                guard let raw = value("readers", key) else { continue }
                guard case .array(let items) = raw else {
                    throw fail("readers", key, "\(key) must be a list of reader ids")
                }
                for item in items {
                    guard case .string(let text) = item else {
                        throw fail("readers", key, "\(key) must be a list of reader ids (strings)")
                    }
                    let reader = try id(text, "readers", key)
                    if let other = rules[reader]?.listing, other != listing {
                        throw fail("readers", key, "reader \(reader) is on both allow and deny")
                    }
                    rules[reader, default: .init()].listing = listing
                    lines[reader] = ("readers", key)
                }
            }
            for name in document.sections.keys.sorted() where name.hasPrefix(Self.readerTablePrefix) {
                let reader = try id(String(name.dropFirst(Self.readerTablePrefix.count)), name, nil)
                if let (section, _) = lines[reader], section != "readers" {
                    throw fail(name, nil, "reader \(reader) has two tables ([\(section)] and [\(name)])")
                }
                var rule = rules[reader] ?? .init()
                rule.pathLossOffset = try double(
                    name, "path_loss_offset", -ReaderScope.offsetLimit...ReaderScope.offsetLimit)
                rule.automatic = try bool(name, "automatic")
                rule.manual = try bool(name, "manual")
                rules[reader] = rule
                lines[reader] = (name, nil)
            }
            guard rules.count <= ReaderScope.ruleLimit else {
                throw fail(
                    "readers", nil, "at most \(ReaderScope.ruleLimit) readers can have a rule (\(rules.count) have)")
            }
            return rules
        }

        func value(_ section: String, _ key: String) -> ConfigurationSyntax.Value? {
            document.sections[section]?[key]?.value
        }

        func string(_ section: String, _ key: String) throws(ConfigurationError) -> String? {
            guard let raw = value(section, key) else { return nil }
            guard case .string(let text) = raw else { throw fail(section, key, "\(key) must be a string") }
            return text
        }

        func bool(_ section: String, _ key: String) throws(ConfigurationError) -> Bool? {
            guard let raw = value(section, key) else { return nil }
            guard case .bool(let flag) = raw else { throw fail(section, key, "\(key) must be true or false") }
            return flag
        }

        func int(_ section: String, _ key: String, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int? {
            guard let raw = value(section, key) else { return nil }
            guard case .integer(let number) = raw else { throw fail(section, key, "\(key) must be a whole number") }
            guard range.contains(number) else {
                throw fail(section, key, "\(key) must be within \(range.lowerBound)...\(range.upperBound)")
            }
            return number
        }

        func double(_ section: String, _ key: String, _ range: ClosedRange<Double>) throws(ConfigurationError)
            -> Double?
        {
            guard let raw = value(section, key) else { return nil }
            let number: Double
            switch raw {
            case .integer(let whole): number = Double(whole)
            case .float(let decimal): number = decimal
            default: throw fail(section, key, "\(key) must be a number")
            }
            guard range.contains(number) else {
                throw fail(section, key, "\(key) must be within \(range.lowerBound)...\(range.upperBound)")
            }
            return number
        }

        /// A duration in seconds (a whole or decimal number).
        func seconds(_ section: String, _ key: String, _ range: ClosedRange<Double>) throws(ConfigurationError)
            -> Duration?
        {
            guard let number = try double(section, key, range) else { return nil }
            return .milliseconds(Int64((number * 1000).rounded()))
        }
    }
}
