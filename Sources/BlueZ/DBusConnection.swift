import CBlueZ
import CDBus
import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc
#endif

/// A connection to a D-Bus bus, driven by the C shim's own thread.
///
/// Calls are async and never block the caller. Signals are delivered to every subscription
/// whose rule matches; each subscription adds its match rule on the bus and removes it when
/// its stream ends, so no rule outlives its user. Method calls to paths registered with
/// `export` go to their handler.
///
/// `@unchecked Sendable`: the two raw pointers are handed only to the shim, whose entry
/// points are thread-safe (cbluez_bus.h); all mutable Swift state sits behind the router's lock.
public final class DBusConnection: @unchecked Sendable {
    public typealias MethodHandler = @Sendable (DBusMessage) -> Void

    struct Subscription {
        var rules: [DBusMatchRule]
        var gauge: DBusSignalStream.Gauge
    }

    struct State {
        var subscriptions: [UInt64: Subscription] = [:]
        var nextSubscription: UInt64 = 0
        var exported: [String: MethodHandler] = [:]
        var disconnectWaiters: [AsyncStream<Void>.Continuation] = []
        var closed = false
        /// Signals dropped for full buffers since the connection opened, all subscriptions.
        var droppedSignals = 0
    }

    /// Shared with the C callbacks through an unmanaged pointer.
    final class Router: Sendable {
        let state = NIOLockedValueBox(State())
        let inFlight = CallLimiter(limit: 64)
    }

    private let bus: OpaquePointer
    private let router: Router
    private let routerPointer: UnsafeMutableRawPointer
    /// This connection's unique bus name.
    public let uniqueName: String

    /// Connects to the system bus, or to `address` (a private bus in tests).
    public init(address: String? = nil) throws(DBusError) {
        let router = Router()
        let pointer = Unmanaged.passRetained(router).toOpaque()
        var failure: UnsafeMutablePointer<CChar>?
        let opened: OpaquePointer? =
            if let address {
                address.withCString { cbz_bus_open($0, onMessage, onDisconnect, pointer, &failure) }
            } else {
                cbz_bus_open(nil, onMessage, onDisconnect, pointer, &failure)
            }
        guard let opened else {
            Unmanaged<Router>.fromOpaque(pointer).release()
            let reason = failure.map { String(cString: $0) } ?? "unknown error"
            free(failure)
            throw .connectionFailed(reason)
        }
        self.bus = opened
        self.router = router
        self.routerPointer = pointer
        self.uniqueName = cbz_bus_unique_name(opened).map { String(cString: $0) } ?? ""
    }

    deinit {
        close()
        // Nothing else can reach the bus now: free it, then the router its callbacks used.
        cbz_bus_free(bus)
        Unmanaged<Router>.fromOpaque(routerPointer).release()
    }

    /// Stops the bus thread and closes the connection; calls still waiting fail with
    /// `.disconnected`, subscriptions finish. Idempotent.
    public func close() {
        let (wasClosed, subscriptions, waiters) = router.state.withLockedValue { state in
            defer {
                state.closed = true
                state.subscriptions.removeAll()
                state.disconnectWaiters.removeAll()
            }
            return (state.closed, Array(state.subscriptions.values), state.disconnectWaiters)
        }
        guard !wasClosed else { return }
        cbz_bus_close(bus)
        for subscription in subscriptions { subscription.gauge.continuation.finish() }
        for waiter in waiters { waiter.finish() }
    }

    public var isConnected: Bool {
        !router.state.withLockedValue { $0.closed } && cbz_bus_is_connected(bus) != 0
    }

    /// Ends when the connection is lost (the bus daemon went away) or closed.
    public func disconnection() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        let closed = router.state.withLockedValue { state in
            if !state.closed { state.disconnectWaiters.append(continuation) }
            return state.closed
        }
        if closed || cbz_bus_is_connected(bus) == 0 { continuation.finish() }
        return stream
    }

    // MARK: Calls

    /// A method's reply: its arguments, and its serial (which orders it against the
    /// replying peer's signals).
    public struct Reply: Sendable {
        public var arguments: [DBusValue]
        public var serial: UInt32
    }

    /// Calls a method and returns its reply's arguments.
    public func call(
        destination: String, path: String, interface: String, method: String, arguments: [DBusValue] = [],
        timeout: Duration = .seconds(25)
    ) async throws(DBusError) -> [DBusValue] {
        try await callForReply(
            destination: destination, path: path, interface: interface, method: method,
            arguments: arguments, timeout: timeout
        ).arguments
    }

    /// Calls a method and returns its whole reply.
    public func callForReply(
        destination: String, path: String, interface: String, method: String, arguments: [DBusValue] = [],
        timeout: Duration = .seconds(25)
    ) async throws(DBusError) -> Reply {
        guard DBusMessageCodec.isValidObjectPath(path) else { throw .invalidArgument("invalid object path \(path)") }
        guard
            let message = destination.withCString({ destination in
                path.withCString { path in
                    interface.withCString { interface in
                        method.withCString { dbus_message_new_method_call(destination, path, interface, $0) }
                    }
                }
            })
        else { throw .invalidArgument("cannot build a call to \(interface).\(method)") }
        defer { dbus_message_unref(message) }
        try DBusMessageCodec.append(arguments, to: message)

        await router.inFlight.acquire()
        defer { router.inFlight.release() }
        let milliseconds = Int32(
            clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        // A cancelled caller is answered at once with `.cancelled`; the reply, when it comes,
        // is dropped (the box resumes its continuation once, whichever comes first).
        let box = ReplyBox()
        let result: Result<Reply, DBusError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                guard box.install(continuation) else { return }
                let context = Unmanaged.passRetained(box).toOpaque()
                if cbz_bus_call(bus, message, milliseconds, onReply, context) != 0 {
                    Unmanaged<ReplyBox>.fromOpaque(context).release()
                    box.resume(.failure(.disconnected))
                }
            }
        } onCancel: {
            box.resume(.failure(.cancelled))
        }
        return try result.get()
    }

    /// Sends a signal.
    public func emitSignal(path: String, interface: String, name: String, arguments: [DBusValue]) throws(DBusError) {
        guard DBusMessageCodec.isValidObjectPath(path) else { throw .invalidArgument("invalid object path \(path)") }
        guard
            let message = path.withCString({ path in
                interface.withCString { interface in name.withCString { dbus_message_new_signal(path, interface, $0) } }
            })
        else { throw .invalidArgument("cannot build signal \(interface).\(name)") }
        defer { dbus_message_unref(message) }
        try DBusMessageCodec.append(arguments, to: message)
        guard cbz_bus_send(bus, message) == 0 else { throw .disconnected }
    }

    // MARK: Signals

    /// Signals matching any of `rules`, in the order the bus delivered them, until the
    /// returned stream is dropped or the connection closes. The match rules are added before
    /// this returns, so no signal sent after it is missed.
    ///
    /// At most `bufferLimit` signals wait for a slow subscriber. Past that, newer signals are
    /// dropped and counted, and the subscriber receives `.overflow(dropped:)` where the gap is,
    /// before the next signal that fits: it must read the state again (BlueZClient answers with
    /// GetManagedObjects). A signal is never dropped silently.
    public func signals(matching rules: [DBusMatchRule], bufferLimit: Int = 4096) async throws(DBusError)
        -> DBusSignalStream
    {
        let (stream, continuation) = AsyncStream<DBusSignal>.makeStream()
        let gauge = DBusSignalStream.Gauge(limit: bufferLimit, continuation: continuation)
        let id: UInt64? = router.state.withLockedValue { state in
            guard !state.closed else { return nil }
            let id = state.nextSubscription
            state.nextSubscription += 1
            state.subscriptions[id] = Subscription(rules: rules, gauge: gauge)
            return id
        }
        guard let id else { throw .disconnected }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            let removed = self.router.state.withLockedValue { $0.subscriptions.removeValue(forKey: id) } != nil
            guard removed, self.isConnected else { return }
            Task {
                for rule in rules {
                    _ = try? await self.call(
                        destination: DBusDaemon.service, path: DBusDaemon.path,
                        interface: DBusDaemon.interface, method: "RemoveMatch",
                        arguments: [.string(rule.description)])
                }
            }
        }
        do {
            for rule in rules {
                _ = try await call(
                    destination: DBusDaemon.service, path: DBusDaemon.path,
                    interface: DBusDaemon.interface, method: "AddMatch",
                    arguments: [.string(rule.description)])
            }
        } catch {
            continuation.finish()
            throw error
        }
        return DBusSignalStream(base: stream, gauge: gauge)
    }

    /// The number of live signal subscriptions (each holds one match rule on the bus).
    public var subscriptionCount: Int { router.state.withLockedValue { $0.subscriptions.count } }

    /// Signals dropped because a subscriber's buffer was full, since the connection opened.
    public var droppedSignals: Int { router.state.withLockedValue { $0.droppedSignals } }

    // MARK: Exported objects

    /// Routes method calls to `path` to `handler`, which must answer each with `reply` or
    /// `replyError`.
    public func export(path: String, handler: @escaping MethodHandler) throws(DBusError) {
        guard DBusMessageCodec.isValidObjectPath(path) else { throw .invalidArgument("invalid object path \(path)") }
        router.state.withLockedValue { $0.exported[path] = handler }
    }

    public func unexport(path: String) {
        router.state.withLockedValue { $0.exported[path] = nil }
    }

    public func reply(to call: DBusMessage, with arguments: [DBusValue] = []) throws(DBusError) {
        guard let original = call.reference?.message, let message = dbus_message_new_method_return(original) else {
            throw .invalidArgument("not a method call")
        }
        defer { dbus_message_unref(message) }
        try DBusMessageCodec.append(arguments, to: message)
        guard cbz_bus_send(bus, message) == 0 else { throw .disconnected }
    }

    public func replyError(to call: DBusMessage, name: String, message text: String) throws(DBusError) {
        guard let original = call.reference?.message,
            let message = name.withCString({ name in text.withCString { dbus_message_new_error(original, name, $0) } })
        else { throw .invalidArgument("not a method call") }
        defer { dbus_message_unref(message) }
        guard cbz_bus_send(bus, message) == 0 else { throw .disconnected }
    }

    // MARK: Delivery (bus thread)

    static func deliver(_ raw: OpaquePointer, router: Router) -> Int32 {
        let type = dbus_message_get_type(raw)
        if type == CBZ_MESSAGE_TYPE_SIGNAL {
            let message = DBusMessage(raw, keepReference: false)
            let gauges = router.state.withLockedValue { state in
                state.subscriptions.values.filter { $0.rules.contains { $0.matches(message) } }.map(\.gauge)
            }
            let dropped = gauges.reduce(0) { $0 + ($1.offer(message) ? 0 : 1) }
            if dropped > 0 { router.state.withLockedValue { $0.droppedSignals += dropped } }
            return 0
        }
        guard type == CBZ_MESSAGE_TYPE_METHOD_CALL, let path = dbus_message_get_path(raw) else { return 0 }
        let handler = router.state.withLockedValue { $0.exported[String(cString: path)] }
        guard let handler else { return 0 }
        handler(DBusMessage(raw, keepReference: true))
        return 1
    }

    static func lost(router: Router) {
        let waiters = router.state.withLockedValue { state in
            defer { state.disconnectWaiters.removeAll() }
            return state.disconnectWaiters
        }
        for waiter in waiters { waiter.finish() }
    }
}
