#if canImport(Glibc)
    import Glibc
#endif

/// sd_notify(3) without libsystemd: one datagram to $NOTIFY_SOCKET per message
/// ("READY=1", "STATUS=...", "WATCHDOG=1", "STOPPING=1"). Does nothing outside systemd.
public struct SystemdNotifier: Sendable {
    public let socketPath: String?
    /// Half of WATCHDOG_USEC, when systemd asks for keep-alives.
    public let watchdogInterval: Duration?

    public init() {
        let path = getenv("NOTIFY_SOCKET").map { String(cString: $0) }
        socketPath = path.flatMap { $0.isEmpty ? nil : $0 }
        if let raw = getenv("WATCHDOG_USEC").map({ String(cString: $0) }), let usec = Int64(raw), usec > 0 {
            watchdogInterval = .microseconds(usec / 2)
        } else {
            watchdogInterval = nil
        }
    }

    public func notify(_ message: String) {
        guard let socketPath else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        // An abstract socket ("@name") starts with a NUL byte.
        var pathBytes = Array(socketPath.utf8)
        if pathBytes.first == UInt8(ascii: "@") { pathBytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + pathBytes.count)
        _ = message.withCString { text in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                    sendto(fd, text, strlen(text), Int32(MSG_NOSIGNAL), socketAddress, length)
                }
            }
        }
    }
}
