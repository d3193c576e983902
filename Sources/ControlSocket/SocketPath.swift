#if canImport(Glibc)
    import Glibc
#endif

/// The control socket's path. A second accessd used to bind over the live socket and
/// remove it when it exited, cutting the running service off from every client. Now a path
/// someone answers on is refused, only a stale socket (nobody answers) is replaced, and
/// the server removes its own file on the way out, never one another process put there.
public enum SocketPath {
    public struct InUse: Error, CustomStringConvertible {
        public let description: String
    }

    /// Makes `path` free for bind: nothing there, or a stale socket (removed). Refuses when a
    /// process answers on it, or when something that is not a socket is in the way.
    public static func claim(_ path: String) throws(InUse) {
        var status = stat()
        guard lstat(path, &status) == 0 else { return }
        guard status.st_mode & S_IFMT == S_IFSOCK else {
            throw InUse(description: "\(path) exists and is not a socket")
        }
        switch probe(path) {
        case 0:
            throw InUse(description: "another accessd answers on \(path)")
        case ECONNREFUSED, ENOENT:
            unlink(path)  // stale: left by a process that died
        case let error:
            throw InUse(description: "cannot tell whether \(path) is in use: \(String(cString: strerror(error)))")
        }
    }

    /// The directory `path` would be bound in, when it is not an existing directory.
    public static func missingDirectory(of path: String) -> String? {
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        var status = stat()
        let checked = directory.isEmpty ? "/" : directory
        guard stat(checked, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else { return checked }
        return nil
    }

    /// The identity of a socket file this process bound.
    struct OwnFile {
        let path: String
        let device: UInt64
        let inode: UInt64

        init?(path: String) {
            var status = stat()
            guard lstat(path, &status) == 0 else { return nil }
            self.path = path
            device = UInt64(status.st_dev)
            inode = UInt64(status.st_ino)
        }

        func removeIfStillOurs() {
            var status = stat()
            guard lstat(path, &status) == 0, UInt64(status.st_dev) == device, UInt64(status.st_ino) == inode else {
                return
            }
            unlink(path)
        }
    }

    /// 0 when something accepted a connection on `path`, else the errno of `connect`.
    private static func probe(_ path: String) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return errno }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return ENAMETOOLONG }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return result == 0 ? 0 : errno
    }
}
