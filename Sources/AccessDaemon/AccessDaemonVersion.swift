import AccessCore
import ControlSocket

/// AccessDaemon is the imperative shell: it feeds BlueZ events and socket requests into
/// the AccessCore state machines and performs the actions they return.
public enum AccessDaemon {
    /// The version string every binary and the socket report.
    public static let version = AccessCoreVersion.string
    /// The control protocol's version (docs/protocol.md, "Versioning").
    public static let protocolVersion = ControlProtocol.version
}
