import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// Who a client is, as the kernel saw it when it connected: SO_PEERCRED's pid, uid and gid,
/// and SO_PEERGROUPS's supplementary groups. Roles come from the groups the process *held*
/// (as dbus-daemon and polkit decide), so a group given by `setpriv --groups`, `sg` or
/// systemd's `SupplementaryGroups=` counts, and one the process dropped does not.
public struct PeerIdentity: Sendable, Equatable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    /// nil when the kernel did not say (SO_PEERGROUPS is Linux 4.13+, or more than
    /// `PeerGroups.capacity` groups): the caller falls back to the group database.
    public var supplementaryGroups: [UInt32]?

    public init(pid: Int32, uid: UInt32, gid: UInt32, supplementaryGroups: [UInt32]?) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.supplementaryGroups = supplementaryGroups
    }

    /// Reads both options from an accepted channel; nil if SO_PEERCRED is unavailable.
    static func of(_ channel: Channel) -> EventLoopFuture<PeerIdentity?> {
        guard let provider = channel as? SocketOptionProvider else { return channel.eventLoop.makeSucceededFuture(nil) }
        let credentials = provider.unsafeGetSocketOption(level: .socket, name: .init(rawValue: SO_PEERCRED))
            .map { (value: PeerCredentials) -> PeerCredentials? in value }
            .recover { _ in nil }
        let groups = provider.unsafeGetSocketOption(level: .socket, name: .init(rawValue: Self.soPeerGroups))
            .map { (buffer: PeerGroups) -> [UInt32]? in buffer.groups }
            .recover { _ in nil }
        return credentials.and(groups).map { credentials, groups in
            credentials.map { PeerIdentity(pid: $0.pid, uid: $0.uid, gid: $0.gid, supplementaryGroups: groups) }
        }
    }

    /// `struct ucred { pid_t pid; uid_t uid; gid_t gid; }` (Glibc hides it without _GNU_SOURCE).
    typealias PeerCredentials = (pid: Int32, uid: UInt32, gid: UInt32)

    /// asm-generic/socket.h; Glibc's Swift overlay does not export it.
    static let soPeerGroups: Int32 = 59
}

/// Room for SO_PEERGROUPS's answer. NIO reads a socket option into a fixed-size value it
/// zero-fills first and does not return the length the kernel wrote, so the count of groups is
/// recovered from the order: the kernel keeps a credential's groups sorted ascending, so the
/// list is the buffer up to its last non-zero gid. Only gid 0 alone cannot be told from no
/// group at all, so a role group with gid 0 is also looked up in the group database (`Groups`).
/// A process with more groups than fit gets ERANGE, and the caller uses the group database.
struct PeerGroups {
    static let capacity = 256
    private var storage: (SIMD64<UInt32>, SIMD64<UInt32>, SIMD64<UInt32>, SIMD64<UInt32>)

    var groups: [UInt32] {
        var all: [UInt32] = []
        all.reserveCapacity(Self.capacity)
        for block in [storage.0, storage.1, storage.2, storage.3] {
            for index in block.indices { all.append(block[index]) }
        }
        guard let last = all.lastIndex(where: { $0 != 0 }) else { return [] }
        return Array(all[...last])
    }
}
