#if canImport(Glibc)
    import Glibc
#endif

/// One accessd per state directory. A second accessd started by hand (`sudo accessd` while
/// testing) on the same state would write the same database and journal behind the
/// service's back; it refuses to start instead and says who holds the directory (exit status
/// 75, docs/operations.md). A directory accessd cannot write is refused here too (73), before
/// anything is opened in it. The socket path is guarded by `SocketPath.claim`.
public enum StateDirectoryLock {
    /// Why this accessd may not start.
    public struct Refusal: Error, CustomStringConvertible {
        public let description: String
        /// 75 (EX_TEMPFAIL) when another accessd holds the directory, 73 (EX_CANTCREAT) when
        /// it cannot be written.
        public var exitStatus: Int32 = StateDirectoryLock.exitStatus
    }

    /// EX_TEMPFAIL: another instance holds the state directory or answers on the socket.
    public static let exitStatus: Int32 = 75
    /// EX_CANTCREAT: the state directory cannot be written.
    public static let notWritableExitStatus: Int32 = 73

    /// Takes an exclusive `flock` on `<directory>/accessd.lock`, kept for the life of the
    /// process (the descriptor is never closed; the kernel releases it at exit, even on a
    /// crash), and writes this process's pid in it for the next one's message.
    public static func lock(_ directory: String) throws(Refusal) {
        mkdir(directory, 0o700)  // AccessStore creates it too; the lock comes first
        // After an unclean stop the database, its -wal and the lock exist, and SQLite opens
        // them even where nothing can be written (a read-only mount): every write would fail
        // later. A clean start refuses such a directory; so does this, whatever is in it.
        guard access(directory, W_OK) == 0 else {
            throw Refusal(
                description: "the state directory \(directory) is not writable: \(String(cString: strerror(errno)))",
                exitStatus: notWritableExitStatus)
        }
        let path = directory + "/accessd.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw Refusal(
                description: "cannot open \(path): \(String(cString: strerror(errno)))",
                exitStatus: notWritableExitStatus)
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let reason =
                errno == EWOULDBLOCK
                ? "another accessd\(pidText(fd)) holds the state directory \(directory)"
                : "cannot lock \(path): \(String(cString: strerror(errno)))"
            close(fd)
            throw Refusal(description: reason)
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
    }

    private static func pidText(_ fd: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 31, 0) }
        guard count > 0,
            let pid = Int32(String(decoding: buffer[0..<count].filter { (48...57).contains($0) }, as: UTF8.self))
        else { return "" }
        return " (pid \(pid))"
    }
}
