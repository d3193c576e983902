import ControlSocket

#if canImport(Glibc)
    import Glibc
#endif

/// Group look-ups for socket roles.
public enum Groups {
    public static func gid(named name: String) -> gid_t? {
        var group = group()
        var buffer = [CChar](repeating: 0, count: 4096)
        var result: UnsafeMutablePointer<group>?
        guard getgrnam_r(name, &group, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return group.gr_gid
    }

    /// Every group `uid` belongs to (primary and supplementary).
    public static func groups(of uid: uid_t, primary: gid_t) -> Set<gid_t> {
        var passwd = passwd()
        var buffer = [CChar](repeating: 0, count: 4096)
        var result: UnsafeMutablePointer<passwd>?
        guard getpwuid_r(uid, &passwd, &buffer, buffer.count, &result) == 0, result != nil, let name = passwd.pw_name
        else {
            return [primary]
        }
        var count: Int32 = 64
        var list = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(name, primary, &list, &count) < 0 {
            list = [gid_t](repeating: 0, count: Int(count))
            _ = getgrouplist(name, primary, &list, &count)
        }
        return Set(list.prefix(Int(max(count, 0)))).union([primary])
    }

    /// The groups this process holds besides its primary one.
    public static func ownSupplementaryGroups() -> Set<gid_t> {
        let count = getgroups(0, nil)
        guard count > 0 else { return [] }
        var list = [gid_t](repeating: 0, count: Int(count))
        let filled = getgroups(count, &list)
        return Set(list.prefix(Int(max(filled, 0))))
    }

    /// root and the daemon's own user are admins; then the admin group, then the operator group,
    /// among the groups the client's process held when it connected.
    public static func roleResolver(operatorGroup: String, adminGroup: String) -> @Sendable (PeerIdentity) -> Role {
        let operatorGID = gid(named: operatorGroup)
        let adminGID = gid(named: adminGroup)
        let ownUID = getuid()
        // SO_PEERGROUPS cannot show gid 0 alone (`PeerGroups`); only then is the database asked too.
        let rootGroupGrantsARole = operatorGID == 0 || adminGID == 0
        return { identity in
            if identity.uid == 0 || identity.uid == ownUID { return .admin }
            var member: Set<gid_t>
            if let held = identity.supplementaryGroups {
                member = Set(held).union([identity.gid])
                if rootGroupGrantsARole, groups(of: identity.uid, primary: identity.gid).contains(0) {
                    member.insert(0)
                }
            } else {
                // An old kernel, or more groups than the buffer holds: the group database.
                member = groups(of: identity.uid, primary: identity.gid)
            }
            if let adminGID, member.contains(adminGID) { return .admin }
            if let operatorGID, member.contains(operatorGID) { return .operator }
            return .observer
        }
    }
}
