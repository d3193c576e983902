import AccessCore

/// One key of accessd.toml: its section, its name, the `AccessdConfiguration` property it
/// sets, and how it is read.
struct ConfigurationKey: Sendable {
    typealias Read = @Sendable (inout AccessdConfiguration, ConfigurationReader) throws(ConfigurationError) -> Void

    let section: String
    let key: String
    /// The property it sets, by name: a reload names what changed by its key (or, for a
    /// property several keys make, its section).
    let property: String
    /// nil: read together with the first key of its property (`[mqtt]` with `url`,
    /// `[readers] deny` with `allow`).
    let read: Read?

    /// `[section] key` as the file and the docs spell it.
    var name: String { "[\(section)] \(key)" }
}

/// Every key of accessd.toml, declared once and read in this order. The loader refuses what
/// is not here, a reload names changed settings from it (`fileNames`), and
/// ConfigurationTests holds it against the keys config/accessd.toml documents.
enum ConfigurationKeys {
    static let all: [ConfigurationKey] =
        bluetooth + access + range + [features, prompt] + socket + store + site + [log] + button + readers
        + [health] + mqtt + [metrics]

    /// Sections and their keys, in the file's order (`[reader.ID]` tables apart: `ReaderRuleKeys`).
    static let sections: [String: [String]] = Dictionary(grouping: all, by: \.section).mapValues { $0.map(\.key) }

    /// Each property's name as an operator writes it: `range.sensitivity`, or the section
    /// for a property several keys make (`mqtt`, `readers`).
    static let fileNames: [String: String] = Dictionary(grouping: all, by: \.property).mapValues { keys in
        keys.count == 1 ? "\(keys[0].section).\(keys[0].key)" : keys[0].section
    }

    static let bluetooth: [ConfigurationKey] = [
        .custom("bluetooth", "adapter", "adapter") { c, r throws(ConfigurationError) in
            guard let v = try r.string("bluetooth", "adapter") else { return }
            guard v.hasPrefix("hci"), Int(v.dropFirst(3)) != nil else {
                throw r.fail("bluetooth", "adapter", "adapter must look like hci0")
            }
            c.adapter = v
        },
        .custom("bluetooth", "adapters", "adapters") { c, r throws(ConfigurationError) in
            guard let raw = r.value("bluetooth", "adapters") else { return }
            let usage = "adapters must be \"auto\" or a list of adapter names like [\"hci0\", \"hci1\"]"
            switch raw {
            case .string("auto"):
                c.adapters = nil
            case .array(let items) where !items.isEmpty && items.count <= 16:
                var names: [String] = []
                for item in items {
                    guard case .string(let name) = item, name.hasPrefix("hci"), Int(name.dropFirst(3)) != nil else {
                        throw r.fail("bluetooth", "adapters", usage)
                    }
                    guard !names.contains(name) else {
                        throw r.fail("bluetooth", "adapters", "\(name) is listed twice")
                    }
                    names.append(name)
                }
                c.adapters = names
            default:
                throw r.fail("bluetooth", "adapters", usage + " (16 at most)")
            }
            if c.adapter != nil {
                throw r.fail("bluetooth", "adapters", "set adapter (one) or adapters (a list), not both")
            }
        },
        .bool("bluetooth", "scanning", "scanningOnStart", \.scanningOnStart),
        .seconds("bluetooth", "discovery_watchdog", "discoveryWatchdog", \.discoveryWatchdog, 5...3600),
        .bool("bluetooth", "radio_recovery", "radioRecovery", \.radioRecovery),
    ]

    static let access: [ConfigurationKey] = [
        .bool("access", "automatic", "automaticAccessOnStart", \.automaticAccessOnStart),
        .int("access", "connection_limit", "connectionLimit", \.connectionLimit, 1...8),
        .seconds("access", "manual_timeout", "manualTimeout", \.manualTimeout, 1...120),
        .seconds("access", "cooldown", "cooldown", \.cooldown, 0...600),
        .seconds("access", "selection_window", "selectionWindow", \.selectionWindow, 0...5),
        .bool("access", "connect_early", "connectEarly", \.connectEarly),
        .seconds("access", "hold_time", "holdTime", \.holdTime, 1...300),
        .int("access", "max_retries", "maximumRetries", \.maximumRetries, 0...10),
        .seconds("access", "step_timeout", "stepTimeout", \.stepTimeout, 1...60),
        .seconds("access", "second_factor_timeout", "secondFactorTimeout", \.secondFactorTimeout, 5...300),
        .seconds("access", "open_next_expiry", "openNextExpiry", \.openNextExpiry, 1...60),
    ]

    static let range: [ConfigurationKey] = [
        .custom("range", "filter", "rangeFilter") { c, r throws(ConfigurationError) in
            guard let v = try r.string("range", "filter") else { return }
            guard let filter = RangeFilter(rawValue: v) else {
                throw r.fail("range", "filter", "filter must be trend_gated or median_average")
            }
            c.rangeFilter = filter
        },
        .custom("range", "median_window", "medianWindow") { c, r throws(ConfigurationError) in
            c.medianWindow = try r.int("range", "median_window", 1...5) ?? c.medianWindow
        },
        .custom("range", "sensitivity", "sensitivity") { c, r throws(ConfigurationError) in
            guard let v = try r.string("range", "sensitivity") else { return }
            guard let s = ConnectionSensitivity(rawValue: v) ?? ConnectionSensitivity.formerNames[v] else {
                throw r.fail(
                    "range", "sensitivity", "sensitivity must be veryLow (-5 dB), low (-2.5 dB) or normal (0 dB)")
            }
            c.sensitivity = s
        },
        .double("range", "smoothing", "smoothingFactor", \.smoothingFactor, 0.01...1),
        .double("range", "approach_smoothing", "approachSmoothingFactor", \.approachSmoothingFactor, 0.01...1),
        .double("range", "exit_margin", "autoRangeExitMargin", \.autoRangeExitMargin, 0...30),
        .seconds("range", "expiry_delay", "expiryDelay", \.expiryDelay, 0...120),
        .seconds("range", "stale_timeout", "staleTimeout", \.staleTimeout, 1...600),
    ]

    static let features = ConfigurationKey.custom("features", "enabled", "features") {
        c, r throws(ConfigurationError) in
        guard let features = r.value("features", "enabled") else { return }
        guard case .array(let array) = features else {
            throw r.fail("features", "enabled", "enabled must be a list of strings")
        }
        var set: Set<String> = []
        for item in array {
            guard case .string(let name) = item, AccessdConfiguration.supportedFeatures.contains(name) else {
                throw r.fail(
                    "features", "enabled",
                    "features are \(AccessdConfiguration.supportedFeatures.sorted().joined(separator: ", "))")
            }
            set.insert(name)
        }
        c.features = set
    }

    static let prompt = ConfigurationKey.custom("prompts", "second_factor", "secondFactorPrompt") {
        c, r throws(ConfigurationError) in
        guard let prompt = try r.string("prompts", "second_factor") else { return }
        guard (1...256).contains(prompt.utf8.count) else {
            throw r.fail("prompts", "second_factor", "second_factor must be 1 to 256 bytes")
        }
        c.secondFactorPrompt = prompt
    }

    static let socket: [ConfigurationKey] = [
        .custom("socket", "path", "socketPath") { c, r throws(ConfigurationError) in
            guard let path = try r.string("socket", "path") else { return }
            guard path.hasPrefix("/"), path.utf8.count < 108 else {
                throw r.fail("socket", "path", "path must be absolute and shorter than 108 bytes")
            }
            c.socketPath = path
        },
        .custom("socket", "group", "socketGroup") { c, r throws(ConfigurationError) in
            c.socketGroup = try r.string("socket", "group") ?? c.socketGroup
        },
        .string("socket", "operator_group", "operatorGroup", \.operatorGroup),
        .string("socket", "admin_group", "adminGroup", \.adminGroup),
        .int("socket", "subscriber_queue", "subscriberQueueLimit", \.subscriberQueueLimit, 16...1_000_000),
        .int("socket", "max_clients", "maximumClients", \.maximumClients, 8...4096),
        .seconds("socket", "idle_timeout", "clientIdleTimeout", \.clientIdleTimeout, 1...86400),
        .seconds("socket", "send_timeout", "clientSendTimeout", \.clientSendTimeout, 1...3600),
    ]

    static let store: [ConfigurationKey] = [
        .custom("store", "state_directory", "stateDirectory") { c, r throws(ConfigurationError) in
            guard let directory = try r.string("store", "state_directory") else { return }
            guard directory.hasPrefix("/") else {
                throw r.fail("store", "state_directory", "state_directory must be absolute")
            }
            c.stateDirectory = directory
        },
        .custom("store", "data_key_file", "dataKeyFile") { c, r throws(ConfigurationError) in
            guard let file = try r.string("store", "data_key_file") else { return }
            guard file.hasPrefix("/") else {
                throw r.fail("store", "data_key_file", "data_key_file must be an absolute path")
            }
            c.dataKeyFile = file
        },
        .int("store", "journal_max_events", "journalMaxEvents", \.journalMaxEvents, 100...100_000_000),
        .custom("store", "journal_max_age_days", "journalMaxAge") { c, r throws(ConfigurationError) in
            if let days = try r.int("store", "journal_max_age_days", 1...3650) {
                c.journalMaxAge = .seconds(days * 86400)
            }
        },
    ]

    static let site: [ConfigurationKey] = [
        .custom("site", "ca_file", "siteCAFile") { c, r throws(ConfigurationError) in
            guard let caFile = try r.string("site", "ca_file") else { return }
            guard caFile.hasPrefix("/") else { throw r.fail("site", "ca_file", "ca_file must be an absolute path") }
            c.siteCAFile = caFile
        },
        .custom("site", "pins", "sitePins") { c, r throws(ConfigurationError) in
            guard let raw = r.value("site", "pins") else { return }
            let usage = "pins must be a list of keys like [\"sha256//<base64>\"] (curl's --pinnedpubkey)"
            guard case .array(let items) = raw, !items.isEmpty else { throw r.fail("site", "pins", usage) }
            var pins: [String] = []
            for item in items {
                guard case .string(let pin) = item else { throw r.fail("site", "pins", usage) }
                pins.append(pin)
            }
            do throws(SitePins.ParseError) {
                c.sitePins = try SitePins(pins)
            } catch {
                throw r.fail("site", "pins", error.description)
            }
        },
        .seconds("site", "request_timeout", "siteRequestTimeout", \.siteRequestTimeout, 1...120),
        .seconds("site", "sync_interval", "siteSyncInterval", \.siteSyncInterval, 10...86400),
        .custom("site", "device_name", "deviceName") { c, r throws(ConfigurationError) in
            guard let name = try r.string("site", "device_name") else { return }
            guard (1...128).contains(name.utf8.count) else {
                throw r.fail("site", "device_name", "device_name must be 1 to 128 bytes")
            }
            c.deviceName = name
        },
        .int("site", "pin_attempts", "pinAttempts", \.pinAttempts, 1...20),
        .custom("site", "max_offline", "maxOffline") { c, r throws(ConfigurationError) in
            guard let limit = try r.int("site", "max_offline", 0...31_536_000) else { return }
            guard limit == 0 || limit >= 60 else {
                throw r.fail("site", "max_offline", "max_offline is 0 (no limit) or 60...31536000 seconds")
            }
            c.maxOffline = limit == 0 ? nil : .seconds(limit)
        },
        .bool("site", "audit_upload", "auditUpload", \.auditUpload),
        .custom("site", "invitation_file", "invitationFile") { c, r throws(ConfigurationError) in
            guard let path = try r.string("site", "invitation_file") else { return }
            guard path.hasPrefix("/"), path.utf8.count < 4096 else {
                throw r.fail("site", "invitation_file", "invitation_file must be an absolute path")
            }
            c.invitationFile = path
        },
    ]

    static let log = ConfigurationKey.custom("log", "level", "logLevel") { c, r throws(ConfigurationError) in
        guard let v = try r.string("log", "level") else { return }
        guard let level = AccessdConfiguration.LogLevel(rawValue: v) else {
            throw r.fail(
                "log", "level",
                "level must be one of \(AccessdConfiguration.LogLevel.allCases.map(\.rawValue).joined(separator: ", "))"
            )
        }
        c.logLevel = level
    }

    static let button: [ConfigurationKey] = [
        .custom("button", "device", "buttonDevice") { c, r throws(ConfigurationError) in
            guard let device = try r.string("button", "device"), !device.isEmpty else { return }
            guard device.hasPrefix("/"), device.utf8.count < 4096 else {
                throw r.fail("button", "device", "device must be an absolute path (/dev/input/...)")
            }
            c.buttonDevice = device
        },
        .custom("button", "key", "buttonKey") { c, r throws(ConfigurationError) in
            guard let key = try r.string("button", "key") else { return }
            guard let code = InputKeyCode(key) else {
                throw r.fail(
                    "button", "key", "key must be a key name such as KEY_ENTER or BTN_0, or its code (1...767)")
            }
            c.buttonKey = code
        },
    ]

    /// `[readers]` with the `[reader.ID]` tables (`ConfigurationReader.readerRules`).
    static let readers: [ConfigurationKey] = [
        .custom("readers", "allow", "readerRules") { c, r throws(ConfigurationError) in
            c.readerRules = try r.readerRules()
        },
        .readTogether("readers", "deny", "readerRules"),
    ]

    static let health = ConfigurationKey.seconds("health", "interval", "healthInterval", \.healthInterval, 5...3600)

    /// `[mqtt]`, read whole (`ConfigurationReader.mqtt`): its keys depend on each other.
    static let mqtt: [ConfigurationKey] =
        [.custom("mqtt", "url", "mqtt") { c, r throws(ConfigurationError) in c.mqtt = try r.mqtt() }]
        + [
            "topic_prefix", "client_id", "username", "password_file", "ca_file", "cert_file", "key_file", "qos",
            "home_assistant", "discovery_prefix", "commands",
        ].map { .readTogether("mqtt", $0, "mqtt") }

    static let metrics = ConfigurationKey.custom("metrics", "listen", "metricsListen") {
        c, r throws(ConfigurationError) in
        guard let listen = try r.string("metrics", "listen") else { return }
        switch MetricsEndpoint.parse(listen) {
        case .success(let endpoint): c.metricsListen = endpoint
        case .failure(let problem): throw r.fail("metrics", "listen", problem.reason)
        }
    }
}

extension ConfigurationKey {
    static func custom(_ section: String, _ key: String, _ property: String, _ read: @escaping Read) -> Self {
        Self(section: section, key: key, property: property, read: read)
    }

    static func readTogether(_ section: String, _ key: String, _ property: String) -> Self {
        Self(section: section, key: key, property: property, read: nil)
    }

    /// A key read as one value into one property; absent, the property keeps its default.
    static func value<Value>(
        _ section: String, _ key: String, _ property: String,
        _ path: WritableKeyPath<AccessdConfiguration, Value> & Sendable,
        _ read: @escaping @Sendable (ConfigurationReader) throws(ConfigurationError) -> Value?
    ) -> Self {
        .custom(section, key, property) { c, r throws(ConfigurationError) in
            c[keyPath: path] = try read(r) ?? c[keyPath: path]
        }
    }

    static func bool(
        _ s: String, _ k: String, _ p: String, _ path: WritableKeyPath<AccessdConfiguration, Bool> & Sendable
    )
        -> Self
    { .value(s, k, p, path) { r throws(ConfigurationError) in try r.bool(s, k) } }

    static func string(
        _ s: String, _ k: String, _ p: String, _ path: WritableKeyPath<AccessdConfiguration, String> & Sendable
    ) -> Self { .value(s, k, p, path) { r throws(ConfigurationError) in try r.string(s, k) } }

    static func int(
        _ s: String, _ k: String, _ p: String, _ path: WritableKeyPath<AccessdConfiguration, Int> & Sendable,
        _ range: ClosedRange<Int>
    ) -> Self { .value(s, k, p, path) { r throws(ConfigurationError) in try r.int(s, k, range) } }

    static func double(
        _ s: String, _ k: String, _ p: String, _ path: WritableKeyPath<AccessdConfiguration, Double> & Sendable,
        _ range: ClosedRange<Double>
    ) -> Self { .value(s, k, p, path) { r throws(ConfigurationError) in try r.double(s, k, range) } }

    static func seconds(
        _ s: String, _ k: String, _ p: String, _ path: WritableKeyPath<AccessdConfiguration, Duration> & Sendable,
        _ range: ClosedRange<Double>
    ) -> Self { .value(s, k, p, path) { r throws(ConfigurationError) in try r.seconds(s, k, range) } }
}
