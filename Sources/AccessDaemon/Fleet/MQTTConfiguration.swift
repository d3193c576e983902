import FoundationEssentials

/// `[mqtt]` in accessd.toml (docs/fleet.md): where the bridge publishes, as whom, and how.
/// Off unless `url` is set.
public struct MQTTConfiguration: Sendable, Hashable {
    public var host: String
    public var port: Int32
    /// `mqtts://`: TLS, verified against `caFile` (or the system's CAs).
    public var tls: Bool
    public var topicPrefix = "accessd"
    /// The `<device>` in every topic and the MQTT client id; nil: the machine id.
    public var clientID: String?
    public var username: String?
    /// A file holding the password (the first line), readable by accessd only.
    public var passwordFile: String?
    public var caFile: String?
    public var certFile: String?
    public var keyFile: String?
    /// 0 or 1 for events (state and status are always QoS 1, retained).
    public var qos: Int32 = 1
    /// The methods taken from `<prefix>/<device>/commands` (docs/fleet.md, "Commands"); empty:
    /// none (off). Only over an authenticated `mqtts://` link; an administrator's method only
    /// with a client certificate.
    public var commands: [String] = []
    /// Publish Home Assistant's discovery configs (docs/fleet.md, "Home Assistant").
    public var homeAssistant = false
    public var discoveryPrefix = "homeassistant"

    public init(
        host: String, port: Int32, tls: Bool, topicPrefix: String = "accessd", clientID: String? = nil,
        username: String? = nil, passwordFile: String? = nil, caFile: String? = nil, certFile: String? = nil,
        keyFile: String? = nil, qos: Int32 = 1
    ) {
        self.host = host
        self.port = port
        self.tls = tls
        self.topicPrefix = topicPrefix
        self.clientID = clientID
        self.username = username
        self.passwordFile = passwordFile
        self.caFile = caFile
        self.certFile = certFile
        self.keyFile = keyFile
        self.qos = qos
    }

    /// Parses `mqtt://HOST[:PORT]` or `mqtts://HOST[:PORT]` (1883 and 8883 by default; an
    /// IPv6 address in brackets); the reason when it is not one.
    public static func parseURL(_ text: String) -> Result<(host: String, port: Int32, tls: Bool), URLProblem> {
        let tls: Bool
        let rest: Substring
        if text.hasPrefix("mqtt://") {
            (tls, rest) = (false, text.dropFirst("mqtt://".count))
        } else if text.hasPrefix("mqtts://") {
            (tls, rest) = (true, text.dropFirst("mqtts://".count))
        } else {
            return .failure(URLProblem(reason: "url must be mqtt://HOST[:PORT] or mqtts://HOST[:PORT]"))
        }
        var host = rest
        var port: Int32 = tls ? 8883 : 1883
        if host.hasSuffix("/") { host = host.dropLast() }
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else {
                return .failure(URLProblem(reason: "an IPv6 host needs its ]"))
            }
            let after = host[host.index(after: close)...]
            if after.hasPrefix(":") {
                guard let value = Int32(after.dropFirst()), (1...65535).contains(value) else {
                    return .failure(URLProblem(reason: "the port must be 1 to 65535"))
                }
                port = value
            } else if !after.isEmpty {
                return .failure(URLProblem(reason: "nothing may follow the host but :PORT"))
            }
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.lastIndex(of: ":") {
            guard let value = Int32(host[host.index(after: colon)...]), (1...65535).contains(value) else {
                return .failure(URLProblem(reason: "the port must be 1 to 65535"))
            }
            port = value
            host = host[..<colon]
        }
        guard !host.isEmpty, host.utf8.count <= 253, !host.contains("/"), !host.contains("@") else {
            return .failure(URLProblem(reason: "url needs a host name or address (no path, no user@)"))
        }
        return .success((String(host), port, tls))
    }

    public struct URLProblem: Error, Equatable {
        public var reason: String
    }

    /// A topic prefix or client id is 1 to 64 bytes of printable ASCII without MQTT's
    /// wildcards (`+`, `#`); a prefix may hold `/` but not begin or end with it.
    public static func topicLevelProblem(_ text: String, allowingSlash: Bool) -> String? {
        guard (1...64).contains(text.utf8.count) else { return "must be 1 to 64 bytes" }
        guard text.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: "#") })
        else { return "must be printable ASCII without spaces, + or #" }
        if !allowingSlash && text.contains("/") { return "must not contain /" }
        if text.hasPrefix("/") || text.hasSuffix("/") || text.contains("//") {
            return "must not begin or end with / or hold //"
        }
        return nil
    }

    /// The default `<device>`: the machine id (systemd's /etc/machine-id), else the host name.
    static func defaultDevice() -> String {
        if let text = try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8) {
            let id = text.trimmingWhitespace()
            if topicLevelProblem(id, allowingSlash: false) == nil { return id }
        }
        let host = ProcessInfo.processInfo.hostName
        return topicLevelProblem(host, allowingSlash: false) == nil ? host : "accessd"
    }
}
