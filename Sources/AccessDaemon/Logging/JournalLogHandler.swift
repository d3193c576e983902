import CSystemd
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// accessd's log handler. Under systemd, where stderr is the journal, each entry goes to
/// journald with fields (`sd_journal_sendv`): `MESSAGE` as the line reads elsewhere,
/// `PRIORITY`, the source location, and every metadata key as a field a fleet can query
/// (`journalctl -u accessd READER_ID=2A01`; `JournalFields` names them). Elsewhere it
/// writes `accessd[level]: message key=value …` lines to stderr.
public struct JournalLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public let label: String
    private let setting: LogLevelSetting
    private let toJournal: Bool

    public init(label: String, setting: LogLevelSetting) {
        self.label = label
        self.setting = setting
        self.toJournal = Self.stderrIsTheJournal()
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
        let sorted = all.sorted { $0.key < $1.key }
        let text = Self.text(event.message, sorted)
        if toJournal {
            var entry = [
                "MESSAGE=\(text)", "PRIORITY=\(Self.priority(event.level))", "SYSLOG_IDENTIFIER=accessd",
                "CODE_FILE=\(event.file)", "CODE_LINE=\(event.line)", "CODE_FUNC=\(event.function)",
            ]
            for (key, value) in sorted { entry.append("\(JournalFields.name(for: key))=\(value)") }
            if Self.send(entry) { return }
        }
        // write(2) on fd 2: Swift 6 refuses the `stderr` FILE global as shared mutable state.
        // Outside the journal nothing else stamps the line (issue #35): the local time first.
        let line = "\(Self.timestamp()) accessd[\(event.level)]: \(text)\n"
        var bytes = Array(line.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress! + offset, $0.count - offset) }
            if written <= 0 { break }
            offset += written
        }
    }

    /// Now as local time with milliseconds and the offset, `2026-11-27T21:45:25.123+0000`
    /// (RFC 3339's order; strftime's `%z`).
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        localtime_r(&seconds, &parts)
        var date = [CChar](repeating: 0, count: 32)
        var zone = [CChar](repeating: 0, count: 8)
        strftime(&date, date.count, "%Y-%m-%dT%H:%M:%S", &parts)
        strftime(&zone, zone.count, "%z", &parts)
        let milliseconds = Int(now.tv_nsec / 1_000_000)
        let fraction =
            milliseconds < 10 ? "00\(milliseconds)" : milliseconds < 100 ? "0\(milliseconds)" : "\(milliseconds)"
        func text(_ buffer: [CChar]) -> String {
            String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return text(date) + "." + fraction + text(zone)
    }

    /// The message and its fields on one line. Control characters are escaped (`\n` as
    /// `\\n`): a site name or error code carrying `\n<0>…` was written as a separate, forged
    /// log line with its own priority prefix (issue #17).
    static func text(_ message: Logger.Message, _ fields: [(key: String, value: Logger.Metadata.Value)]) -> String {
        var text = LogText.escaped("\(message)")
        for (key, value) in fields {
            text += " \(LogText.escaped(key))=\(LogText.escaped("\(value)"))"
        }
        return text
    }

    /// True when journald set JOURNAL_STREAM to stderr's device and inode (systemd.exec(5)):
    /// a redirected stderr keeps plain lines.
    static func stderrIsTheJournal() -> Bool {
        guard let value = getenv("JOURNAL_STREAM").map({ String(cString: $0) }) else { return false }
        let parts = value.split(separator: ":")
        var status = stat()
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]), fstat(2, &status) == 0
        else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }

    /// One entry; false when journald did not take it (then the line goes to stderr).
    private static func send(_ fields: [String]) -> Bool {
        var bytes: [UInt8] = []
        var ranges: [Range<Int>] = []
        for field in fields {
            let start = bytes.count
            bytes.append(contentsOf: field.utf8)
            ranges.append(start..<bytes.count)
        }
        return bytes.withUnsafeMutableBytes { raw in
            guard let base = raw.baseAddress else { return false }
            let vectors = ranges.map { iovec(iov_base: base + $0.lowerBound, iov_len: $0.count) }
            return sd_journal_sendv(vectors, Int32(vectors.count)) == 0
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
