import AccessCore
import ControlSocket

/// The two sections read whole: `[mqtt]`, whose keys depend on each other, and the reader
/// scope (`[readers]` with a `[reader.ID]` table per reader).
extension ConfigurationReader {
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
        m.commands = try commandMethods()
        if !m.commands.isEmpty && !(m.tls && (m.username != nil || m.certFile != nil)) {
            throw fail(
                "mqtt", "commands",
                "commands need an mqtts:// url and a username or a client certificate: "
                    + "whoever can publish to the command topic acts as an operator")
        }
        if let admin = m.commands.first(where: { ControlMethod(rawValue: $0)?.role == .admin }), m.certFile == nil {
            throw fail(
                "mqtt", "commands",
                "\(admin) is an administrator's method: it needs a client certificate (cert_file), "
                    + "so that the broker knows every publisher by its certificate")
        }
        if let prefix = try string("mqtt", "discovery_prefix") {
            if let problem = MQTTConfiguration.topicLevelProblem(prefix, allowingSlash: true) {
                throw fail("mqtt", "discovery_prefix", "discovery_prefix \(problem)")
            }
            m.discoveryPrefix = prefix
        }
        return m
    }

    /// `[mqtt] commands`: true (the three an operator at a door needs), false, or a list.
    private func commandMethods() throws(ConfigurationError) -> [String] {
        switch value("mqtt", "commands") {
        case nil, .bool(false)?: return []
        case .bool(true)?: return MQTTCommands.defaultMethods
        case .array(let items)? where !items.isEmpty && items.count <= ControlMethod.allCases.count:
            var names: [String] = []
            for item in items {
                guard case .string(let name) = item, let method = ControlMethod(rawValue: name) else {
                    throw fail(
                        "mqtt", "commands",
                        "commands lists method names (\(MQTTCommands.takeable.map(\.rawValue).joined(separator: ", ")))"
                    )
                }
                if let why = MQTTCommands.neverTaken[method] {
                    throw fail("mqtt", "commands", "\(name) is never taken over MQTT: \(why)")
                }
                if !names.contains(name) { names.append(name) }
            }
            return names
        default:
            throw fail("mqtt", "commands", "commands must be true, false or a list of method names")
        }
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

}
