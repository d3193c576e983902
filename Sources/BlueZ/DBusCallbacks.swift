import CBlueZ
import CDBus
import NIOConcurrencyHelpers

// What the C shim calls back on its bus thread: a call's reply, an incoming message, the
// connection lost. Each finds its Swift object through the context pointer it was given.

/// Carries a call's continuation through the C shim, and resumes it exactly once: with the
/// reply, or earlier with `.cancelled` when the caller's task is cancelled.
final class ReplyBox: Sendable {
    typealias Answer = Result<DBusConnection.Reply, DBusError>
    private enum State {
        case waiting
        case installed(CheckedContinuation<Answer, Never>)
        case answered
    }

    private let state = NIOLockedValueBox(State.waiting)

    /// False when the call was cancelled before it was sent: the continuation is resumed.
    func install(_ continuation: CheckedContinuation<Answer, Never>) -> Bool {
        let installed = state.withLockedValue { state -> Bool in
            guard case .waiting = state else { return false }
            state = .installed(continuation)
            return true
        }
        if !installed { continuation.resume(returning: .failure(.cancelled)) }
        return installed
    }

    func resume(_ answer: Answer) {
        let continuation = state.withLockedValue { state -> CheckedContinuation<Answer, Never>? in
            defer { state = .answered }
            if case .installed(let continuation) = state { return continuation }
            return nil
        }
        continuation?.resume(returning: answer)
    }
}

func onReply(_ context: UnsafeMutableRawPointer?, _ reply: OpaquePointer?) {
    guard let context else { return }
    let box = Unmanaged<ReplyBox>.fromOpaque(context).takeRetainedValue()
    guard let reply else {
        box.resume(.failure(.disconnected))
        return
    }
    defer { dbus_message_unref(reply) }
    if dbus_message_get_type(reply) == CBZ_MESSAGE_TYPE_ERROR {
        let name = dbus_message_get_error_name(reply).map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
        let text = DBusMessageCodec.arguments(of: reply).first?.string ?? ""
        box.resume(.failure(.remote(name: name, message: text)))
    } else {
        box.resume(
            .success(
                DBusConnection.Reply(
                    arguments: DBusMessageCodec.arguments(of: reply),
                    serial: dbus_message_get_serial(reply))))
    }
}

func onMessage(_ context: UnsafeMutableRawPointer?, _ message: OpaquePointer?) -> Int32 {
    guard let context, let message else { return 0 }
    return DBusConnection.deliver(
        message, router: Unmanaged<DBusConnection.Router>.fromOpaque(context).takeUnretainedValue())
}

func onDisconnect(_ context: UnsafeMutableRawPointer?) {
    guard let context else { return }
    DBusConnection.lost(router: Unmanaged<DBusConnection.Router>.fromOpaque(context).takeUnretainedValue())
}
