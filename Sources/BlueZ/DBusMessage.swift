import CBlueZ
import CDBus

/// An incoming message (signal or method call), copied out of libdbus so it can cross
/// threads. A method call keeps a reference to the libdbus message so it can be answered.
public struct DBusMessage: Sendable, CustomStringConvertible {
    public enum Kind: Sendable { case methodCall, methodReturn, error, signal }

    public var kind: Kind
    public var sender: String?
    public var destination: String?
    public var path: String?
    public var interface: String?
    public var member: String?
    public var arguments: [DBusValue]
    /// The sender's number for this message. A sender numbers its messages (signals and
    /// replies alike) in the order it sends them, and the bus keeps that order.
    public var serial: UInt32
    let reference: DBusMessageReference?

    init(_ message: OpaquePointer, keepReference: Bool) {
        switch dbus_message_get_type(message) {
        case CBZ_MESSAGE_TYPE_METHOD_CALL: kind = .methodCall
        case CBZ_MESSAGE_TYPE_METHOD_RETURN: kind = .methodReturn
        case CBZ_MESSAGE_TYPE_ERROR: kind = .error
        default: kind = .signal
        }
        func header(_ value: UnsafePointer<CChar>?) -> String? { value.map { String(cString: $0) } }
        sender = header(dbus_message_get_sender(message))
        destination = header(dbus_message_get_destination(message))
        path = header(dbus_message_get_path(message))
        interface = header(dbus_message_get_interface(message))
        member = header(dbus_message_get_member(message))
        arguments = DBusMessageCodec.arguments(of: message)
        serial = dbus_message_get_serial(message)
        reference = keepReference ? DBusMessageReference(message) : nil
    }

    public var description: String {
        "\(kind) \(sender ?? "-") \(path ?? "-") \(interface ?? "-").\(member ?? "-") \(arguments)"
    }
}

/// Owns one reference to a libdbus message; libdbus messages are safe to share once built.
final class DBusMessageReference: @unchecked Sendable {
    let message: OpaquePointer

    init(_ message: OpaquePointer) {
        self.message = dbus_message_ref(message)
    }

    deinit {
        dbus_message_unref(message)
    }
}

/// A match rule for signals (D-Bus specification, "Match Rules").
public struct DBusMatchRule: Hashable, Sendable, CustomStringConvertible {
    public var sender: String?
    public var interface: String?
    public var member: String?
    public var path: String?
    public var pathNamespace: String?
    public var arg0: String?

    public init(
        sender: String? = nil, interface: String? = nil, member: String? = nil, path: String? = nil,
        pathNamespace: String? = nil, arg0: String? = nil
    ) {
        self.sender = sender
        self.interface = interface
        self.member = member
        self.path = path
        self.pathNamespace = pathNamespace
        self.arg0 = arg0
    }

    /// The rule as the bus daemon takes it in AddMatch.
    public var description: String {
        var parts = ["type='signal'"]
        func add(_ key: String, _ value: String?) {
            if let value { parts.append("\(key)='\(value.replacingApostrophes)'") }
        }
        add("sender", sender)
        add("interface", interface)
        add("member", member)
        add("path", path)
        add("path_namespace", pathNamespace)
        add("arg0", arg0)
        return parts.joined(separator: ",")
    }

    /// Whether a signal fits the rule's interface, member, path and arg0. The sender is
    /// checked by the bus daemon (a well-known name is not what arrives in the header).
    func matches(_ message: DBusMessage) -> Bool {
        guard message.kind == .signal else { return false }
        if let interface, message.interface != interface { return false }
        if let member, message.member != member { return false }
        if let path, message.path != path { return false }
        if let pathNamespace, let messagePath = message.path {
            guard
                messagePath == pathNamespace || messagePath.hasPrefix(pathNamespace == "/" ? "/" : pathNamespace + "/")
            else { return false }
        }
        if let arg0, message.arguments.first?.string != arg0 { return false }
        return true
    }
}

extension String {
    /// Match rule values are quoted with apostrophes; an apostrophe inside is written '\''.
    fileprivate var replacingApostrophes: String {
        split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''")
    }
}
