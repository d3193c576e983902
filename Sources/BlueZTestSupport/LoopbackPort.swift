#if canImport(Glibc)
    import Glibc
#endif

/// TCP ports on 127.0.0.1 for test servers (a broker, a metrics listener), chosen by the
/// kernel so that parallel tests and benchmarks never collide.
public enum LoopbackPort {
    /// A socket bound to a free port (not yet listening): the caller keeps or closes it.
    public static func bound() throws -> (descriptor: Int32, port: Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard descriptor >= 0, ok else {
            if descriptor >= 0 { close(descriptor) }
            throw TestEnvironmentError("no free port on 127.0.0.1")
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A port that was free a moment ago, for a server started next.
    public static func free() throws -> Int {
        let (descriptor, port) = try bound()
        close(descriptor)
        return port
    }
}
