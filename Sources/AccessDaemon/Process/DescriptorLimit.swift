#if canImport(Glibc)
    import Glibc
#endif

/// File descriptors for `[socket] max_clients`: one per client, plus accessd's own (the
/// bus, the database and its journal, site connections, the journal socket). Raises the soft
/// limit towards the hard one when it is short, as a daemon started by hand (soft limit
/// 1024) may need; refuses to start when even the hard limit is short, rather than run out
/// under load (issue #17: running out aborted accessd).
public enum DescriptorLimit {
    /// Descriptors accessd holds besides its clients, with room to spare (measured: 23 idle).
    public static let ownDescriptors = 64

    public struct TooLow: Error, CustomStringConvertible {
        public var needed: Int
        public var hard: Int
        public var description: String {
            "[socket] max_clients needs \(needed) file descriptors, the limit is \(hard): lower max_clients or raise LimitNOFILE"
        }
    }

    /// The soft limit after making room for `clients`.
    @discardableResult
    public static func ensure(clients: Int) throws(TooLow) -> Int {
        let needed = clients + ownDescriptors
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return needed }
        if limit.rlim_cur >= rlim_t(needed) { return Int(clamping: limit.rlim_cur) }
        guard limit.rlim_max >= rlim_t(needed) else {
            throw TooLow(needed: needed, hard: Int(clamping: limit.rlim_max))
        }
        limit.rlim_cur = rlim_t(needed)
        guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
            throw TooLow(needed: needed, hard: Int(clamping: limit.rlim_max))
        }
        return needed
    }
}
