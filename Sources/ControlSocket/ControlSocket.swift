/// ControlSocket speaks JSON-RPC 2.0, one object per line, on accessd's Unix socket
/// (docs/protocol.md). It is built with the daemon (issue 4); until then this module
/// holds only its namespace.
public enum ControlSocket {}
