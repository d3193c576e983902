import ControlSocket
import NIOSSL

#if canImport(Glibc)
    import Glibc
#endif

/// What start needs of the machine that a file's syntax cannot say: the files it names exist
/// and hold what they should, the groups it names exist, the socket's directory exists.
/// `accessd --check-config` runs the same checks, so a file it passes starts (issue #12: it
/// said OK for a missing `ca_file` or group, and start then failed, or the first site call).
public enum ConfigurationChecks {
    /// The unit's `RuntimeDirectory=`: systemd makes it when the service starts, so a check
    /// made while the service is stopped does not find it and must not refuse the file for it.
    public static let runtimeDirectory = "/run/accessd"

    /// One sentence per problem, naming the setting; empty when start would accept it.
    /// `atStart`: accessd is starting (else `--check-config`, maybe with the service stopped).
    public static func problems(_ configuration: AccessdConfiguration, atStart: Bool) -> [String] {
        var problems: [String] = []
        if let caFile = configuration.siteCAFile {
            if access(caFile, R_OK) != 0 {
                problems.append("[site] ca_file \(caFile): \(String(cString: strerror(errno)))")
            } else if ((try? NIOSSLCertificate.fromPEMFile(caFile)) ?? []).isEmpty {
                problems.append("[site] ca_file \(caFile): no PEM certificate in it")
            }
        }
        if let group = configuration.socketGroup, Groups.gid(named: group) == nil {
            problems.append("[socket] group '\(group)' does not exist")
        }
        if let missing = SocketPath.missingDirectory(of: configuration.socketPath),
            atStart || missing != runtimeDirectory
        {
            problems.append("the socket's directory \(missing) does not exist ([socket] path)")
        }
        // The HTTP listener would take the control socket's path, or start would fail on it
        // and systemd restart it in a loop (issue #33).
        if case .unix(let path) = configuration.metricsListen, path == configuration.socketPath {
            problems.append("[metrics] listen \(path) is the control socket's path ([socket] path): name another")
        }
        return problems
    }
}
