/// A configuration file accessd refuses, with where and why: printed at start (exit 78,
/// EX_CONFIG) and by `accessd --check-config`.
public struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    public var file: String
    /// 1-based; nil when the problem is not on one line (the file cannot be read).
    public var line: Int?
    public var reason: String

    public init(file: String, line: Int?, reason: String) {
        self.file = file
        self.line = line
        self.reason = reason
    }

    public var description: String {
        if let line { return "\(file):\(line): \(reason)" }
        return "\(file): \(reason)"
    }
}
