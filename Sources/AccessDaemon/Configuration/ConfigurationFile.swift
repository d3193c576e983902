import BoundedFile

/// The configuration file's bytes, read with bounds (`BoundedFile`): a FIFO that would block
/// start or reload, `/dev/zero` that never ends, a directory are refused with what they are
/// (issue #33: all three were "cannot read: Success").
enum ConfigurationFile {
    /// Far above any real accessd.toml (the shipped one, every key commented, is ~12 KB).
    static let limit = 1 << 20

    static func read(_ path: String) throws(ConfigurationError) -> [UInt8] {
        do {
            return try BoundedFile.read(path, limit: limit)
        } catch {
            let reason =
                switch error {
                case .unreadable(let why, _): "cannot read: \(why)"
                case .notARegularFile("a directory"): "is a directory, not a file"
                case .notARegularFile(let what): "is \(what), not a regular file"
                case .tooLarge: "is larger than \(limit / 1024) KiB: not a configuration file"
                }
            throw ConfigurationError(file: path, line: nil, reason: reason)
        }
    }
}
