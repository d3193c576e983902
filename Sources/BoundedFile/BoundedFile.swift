#if canImport(Glibc)
    import Glibc
#endif

/// A small file read whole, with bounds: a regular file of at most `limit` bytes. Anything
/// else (a FIFO that would block, `/dev/zero` that never ends, a directory) is refused with
/// what it is. Opened non-blocking, so a FIFO with no writer does not hang the open either.
///
/// The configuration, an invitation, the data key file and the diagnostics bundle's copy of
/// the configuration are read this way. Written against the C library, not Foundation's
/// `FileHandle`: accessd links FoundationEssentials only (issue #37), which has no
/// FileHandle, and `Data(contentsOf:)` reads without a bound.
public enum BoundedFile {
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// open(2) or read(2) failed: strerror's words.
        case unreadable(String, errno: Int32)
        /// Not a regular file: what it is ("a directory", "a FIFO", "a device").
        case notARegularFile(String)
        /// Larger than the limit (checked before reading, and again by reading one byte more).
        case tooLarge(limit: Int)

        public var description: String {
            switch self {
            case .unreadable(let reason, _): "cannot read: \(reason)"
            case .notARegularFile(let what): "is \(what), not a regular file"
            case .tooLarge(let limit): "is larger than \(limit) bytes"
            }
        }
    }

    public static func read(_ path: String, limit: Int) throws(Failure) -> [UInt8] {
        func failure() -> Failure {
            let code = errno
            return .unreadable(String(cString: strerror(code)), errno: code)
        }
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { throw failure() }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure() }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw .notARegularFile("a directory")
        case S_IFIFO: throw .notARegularFile("a FIFO")
        case S_IFCHR, S_IFBLK: throw .notARegularFile("a device")
        default: throw .notARegularFile("something else")
        }
        guard info.st_size <= limit else { throw .tooLarge(limit: limit) }
        // One byte more than the limit: a file that grew since fstat is caught too.
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) }
            if got == 0 { break }
            if got < 0 {
                if errno == EINTR { continue }
                throw failure()
            }
            count += got
        }
        guard count <= limit else { throw .tooLarge(limit: limit) }
        return Array(bytes[..<count])
    }
}
