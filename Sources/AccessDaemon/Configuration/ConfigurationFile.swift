import Foundation

/// The configuration file's bytes, read with bounds: a regular file of at most `limit`
/// bytes. Anything else (a FIFO that would block start or reload, `/dev/zero` that never
/// ends, a directory) is refused with what it is (issue #33: all three were "cannot read:
/// Success"). Opened non-blocking, so a FIFO with no writer does not hang the open either.
enum ConfigurationFile {
    /// Far above any real accessd.toml (the shipped one, every key commented, is ~12 KB).
    static let limit = 1 << 20

    static func read(_ path: String) throws(ConfigurationError) -> [UInt8] {
        func refuse(_ reason: String) -> ConfigurationError {
            ConfigurationError(file: path, line: nil, reason: reason)
        }
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { throw refuse("cannot read: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw refuse("cannot read: \(String(cString: strerror(errno)))") }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw refuse("is a directory, not a file")
        case S_IFIFO: throw refuse("is a FIFO, not a regular file")
        case S_IFCHR, S_IFBLK: throw refuse("is a device, not a regular file")
        default: throw refuse("is not a regular file")
        }
        guard info.st_size <= limit else {
            throw refuse("is larger than \(limit / 1024) KiB: not a configuration file")
        }
        // One byte more than the limit: a file that grew since fstat is caught too.
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { Foundation.read(fd, $0.baseAddress! + count, $0.count - count) }
            if got == 0 { break }
            if got < 0 {
                if errno == EINTR { continue }
                throw refuse("cannot read: \(String(cString: strerror(errno)))")
            }
            count += got
        }
        guard count <= limit else { throw refuse("is larger than \(limit / 1024) KiB: not a configuration file") }
        return Array(bytes[..<count])
    }
}
