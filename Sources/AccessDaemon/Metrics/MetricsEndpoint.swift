/// `[metrics] listen` (docs/operations.md, "Metrics"): where `/metrics` is served.
public enum MetricsEndpoint: Sendable, Hashable, CustomStringConvertible {
    case tcp(host: String, port: Int)
    /// A Unix socket path, for a scraper on the same machine without a TCP port.
    case unix(path: String)

    /// `HOST:PORT` (an IPv6 host in brackets) or an absolute path; the reason when neither.
    public static func parse(_ text: String) -> Result<MetricsEndpoint, Problem> {
        if text.hasPrefix("/") {
            guard text.utf8.count < 108 else {
                return .failure(Problem(reason: "a socket path is shorter than 108 bytes"))
            }
            return .success(.unix(path: text))
        }
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (1...65535).contains(port)
        else {
            return .failure(
                Problem(reason: "listen must be HOST:PORT (e.g. 127.0.0.1:9464) or an absolute socket path"))
        }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, !host.contains("/") else {
            return .failure(Problem(reason: "listen needs a host before :PORT"))
        }
        return .success(.tcp(host: host, port: port))
    }

    public struct Problem: Error, Equatable {
        public var reason: String
    }

    public var description: String {
        switch self {
        case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .unix(let path): path
        }
    }
}
