/// What BlueZ (or D-Bus on its way) said no with, typed so that callers can tell a
/// transient refusal from a permanent one. `code` is stable for logs and the socket.
public enum BlueZError: Error, Hashable, Sendable, CustomStringConvertible {
    /// org.bluez.Error.NotReady: the adapter is not powered or not yet initialised.
    case notReady
    /// org.bluez.Error.InProgress: an operation of the same kind is already running.
    case inProgress
    case alreadyConnected
    /// org.bluez.Error.Failed with "le-connection-abort-by-local" and friends: the
    /// controller gave up on a connection attempt.
    case connectionAborted(String)
    /// org.bluez.Error.Failed with any other message.
    case failed(String)
    /// org.bluez.Error.NotPermitted / NotAuthorized, or D-Bus AccessDenied: policy refuses us.
    case accessDenied(String)
    case notSupported
    case invalidArguments(String)
    /// The object (adapter, device, characteristic) does not exist (any more).
    case doesNotExist
    /// No reply in time.
    case timeout
    /// bluetoothd is not on the bus.
    case serviceUnknown
    /// Our own connection to the bus is gone.
    case disconnected
    /// The caller's task was cancelled before BlueZ answered.
    case cancelled
    /// Anything else, with its D-Bus name.
    case other(name: String, message: String)

    public init(_ error: DBusError) {
        switch error {
        case .disconnected, .connectionFailed: self = .disconnected
        case .cancelled: self = .cancelled
        case .invalidArgument(let reason), .unexpectedReply(let reason): self = .invalidArguments(reason)
        case .outOfMemory: self = .failed("out of memory")
        case .remote(let name, let message):
            switch name {
            case "org.bluez.Error.NotReady": self = .notReady
            case "org.bluez.Error.InProgress", "org.bluez.Error.Busy": self = .inProgress
            case "org.bluez.Error.AlreadyConnected": self = .alreadyConnected
            case "org.bluez.Error.Failed":
                self =
                    message.contains("abort") || message.contains("Software caused connection abort")
                    ? .connectionAborted(message) : .failed(message)
            case "org.bluez.Error.NotPermitted", "org.bluez.Error.NotAuthorized",
                "org.freedesktop.DBus.Error.AccessDenied":
                self = .accessDenied(message)
            case "org.bluez.Error.NotSupported": self = .notSupported
            case "org.bluez.Error.InvalidArguments", "org.freedesktop.DBus.Error.InvalidArgs":
                self = .invalidArguments(message)
            case "org.bluez.Error.DoesNotExist", "org.bluez.Error.NotAvailable",
                "org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.DBus.Error.UnknownMethod":
                self = .doesNotExist
            case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout",
                "org.freedesktop.DBus.Error.TimedOut":
                self = .timeout
            case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
                self = .serviceUnknown
            default:
                self = .other(name: name, message: message)
            }
        }
    }

    /// Worth retrying after a pause (the core's backoff classes).
    public var isTransient: Bool {
        switch self {
        case .notReady, .inProgress, .connectionAborted, .timeout, .doesNotExist, .failed: true
        default: false
        }
    }

    public var code: String {
        switch self {
        case .notReady: "notReady"
        case .inProgress: "inProgress"
        case .alreadyConnected: "alreadyConnected"
        case .connectionAborted: "connectionAborted"
        case .failed: "failed"
        case .accessDenied: "accessDenied"
        case .notSupported: "notSupported"
        case .invalidArguments: "invalidArguments"
        case .doesNotExist: "doesNotExist"
        case .timeout: "timeout"
        case .serviceUnknown: "serviceUnknown"
        case .disconnected: "disconnected"
        case .cancelled: "cancelled"
        case .other: "other"
        }
    }

    public var description: String {
        switch self {
        case .connectionAborted(let message), .failed(let message), .accessDenied(let message),
            .invalidArguments(let message):
            "\(code): \(message)"
        case .other(let name, let message): "\(name): \(message)"
        default: code
        }
    }
}
