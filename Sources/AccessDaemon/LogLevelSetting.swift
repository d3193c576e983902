import Logging
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#endif

/// The log level, changeable at run time (`log.setLevel`) and read by the log handler.
public final class LogLevelSetting: Sendable {
    private let level: NIOLockedValueBox<Logger.Level>

    public init(_ level: Logger.Level) {
        self.level = NIOLockedValueBox(level)
    }

    public var current: Logger.Level { level.withLockedValue { $0 } }

    public func set(_ level: Logger.Level) {
        self.level.withLockedValue { $0 = level }
    }
}

/// Writes log lines to stderr. Under systemd (JOURNAL_STREAM set) each line starts with its
/// syslog priority (`<3>`), which journald turns into the entry's priority.
public struct JournalLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public let label: String
    private let setting: LogLevelSetting
    private let underJournal: Bool

    public init(label: String, setting: LogLevelSetting) {
        self.label = label
        self.setting = setting
        self.underJournal = getenv("JOURNAL_STREAM") != nil
    }

    public var logLevel: Logger.Level {
        get { setting.current }
        set { setting.set(newValue) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { _, new in new }
        let fields = all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let text = fields.isEmpty ? "\(event.message)" : "\(event.message) \(fields)"
        let line: String
        if underJournal {
            line = "<\(Self.priority(event.level))>\(text)\n"
        } else {
            line = "accessd[\(event.level)]: \(text)\n"
        }
        // write(2) on fd 2: Swift 6 refuses the `stderr` FILE global as shared mutable state.
        var bytes = Array(line.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress! + offset, $0.count - offset) }
            if written <= 0 { break }
            offset += written
        }
    }

    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }
}
