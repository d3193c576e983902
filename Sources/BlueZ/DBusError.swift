/// A failed D-Bus call or a refused message, with the D-Bus error name when there is one.
public enum DBusError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The peer answered with an error message.
    case remote(name: String, message: String)
    /// Could not connect to the bus.
    case connectionFailed(String)
    /// The connection was closed before the reply came.
    case disconnected
    /// A value we were asked to send is not valid D-Bus (bad object path, NUL in a string, ...).
    case invalidArgument(String)
    /// The reply did not have the expected arguments.
    case unexpectedReply(String)
    case outOfMemory
    /// The caller's task was cancelled before the reply came.
    case cancelled

    public var name: String? {
        if case .remote(let name, _) = self { return name }
        return nil
    }

    public var description: String {
        switch self {
        case .remote(let name, let message): "\(name): \(message)"
        case .connectionFailed(let reason): "cannot connect to D-Bus: \(reason)"
        case .disconnected: "D-Bus connection closed"
        case .invalidArgument(let reason): "invalid D-Bus argument: \(reason)"
        case .unexpectedReply(let reason): "unexpected D-Bus reply: \(reason)"
        case .outOfMemory: "out of memory building a D-Bus message"
        case .cancelled: "cancelled"
        }
    }
}
