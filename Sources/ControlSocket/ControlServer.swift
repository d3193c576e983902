import AccessJSON
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOExtras
import NIOPosix

#if canImport(Glibc)
    import Glibc
#endif

/// Answers requests from one client. Implemented by the daemon.
public protocol ControlRequestHandler: Sendable {
    func handle(_ request: RPCRequest, from client: ControlClient) async -> Result<JSONValue, RPCError>
    func disconnected(_ client: ControlClient) async
}

/// One connected client: who it is and where its answers and events go.
public final class ControlClient: Sendable, Hashable {
    public let id: UInt64
    public let role: Role
    public let uid: UInt32
    public let pid: Int32
    let outbox: ClientOutbox
    let activity = NIOLockedValueBox(ClientActivity())
    private let watcher: HangUpWatcher?

    init(
        id: UInt64, role: Role, uid: UInt32, pid: Int32, eventLimit: Int,
        dropped: DroppedEventCounter = DroppedEventCounter(), watcher: HangUpWatcher? = nil
    ) {
        self.watcher = watcher
        self.id = id
        self.role = role
        self.uid = uid
        self.pid = pid
        self.outbox = ClientOutbox(eventLimit: eventLimit, dropped: dropped)
    }

    /// A caller that is not on the socket (the MQTT bridge's command topic, docs/fleet.md):
    /// its own id range, no peer (uid and pid unknown), and the role its channel earned.
    public static func outsideTheSocket(id: UInt64, role: Role) -> ControlClient {
        ControlClient(id: UInt64.max - id, role: role, uid: UInt32.max, pid: -1, eventLimit: 1)
    }

    /// Queues an event notification for this client; never blocks, never grows without bound.
    public func deliver(sequence: Int64, notification: String) {
        outbox.pushEvent(sequence: sequence, line: notification)
    }

    /// A subscriber is never closed for being idle: a quiet door sends nothing for hours.
    public func setSubscribed(_ subscribed: Bool) {
        activity.withLockedValue { $0.subscribed = subscribed }
    }

    /// How many more events fit in this client's queue before they are dropped.
    public var eventRoom: Int { outbox.eventRoom }

    /// True once the client closed its connection or shut its sending side (seen at once, even
    /// while one of its requests is being answered). A closed peer reads as end of input like a
    /// half-closed one (answers to a half-closed client are still written); what only a caller
    /// that stays connected can use stops here.
    public var hasHungUp: Bool { outbox.hasHungUp || watcher?.hasHungUp == true }

    /// Tells the client the events `from...to` were dropped (`events.dropped`), without them.
    public func deliverDropped(from: Int64, to: Int64) {
        outbox.pushGap(from: from, to: to)
    }

    public static func == (lhs: ControlClient, rhs: ControlClient) -> Bool { lhs.id == rhs.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}

/// The control socket: a Unix stream socket speaking JSON-RPC 2.0, one object per line
/// (docs/protocol.md). Created with mode 0660 (and the configured group); each client's
/// role comes from its peer credentials. Bad input gets an error answer or a disconnect,
/// and never touches another client.
public final class ControlServer: Sendable {
    public static let maximumLineLength = 64 * 1024
    /// How long a client may leave `ClientOutbox.responseLimit` answers unread.
    static let unreadPatience: Duration = .seconds(10)

    public let path: String
    private let group: gid_t?
    private let handler: any ControlRequestHandler
    private let roleOf: @Sendable (PeerIdentity) -> Role
    private let eventLimit: Int
    private let logger: Logger
    private let clientIDs = ClientCounter()
    private let admission: ClientAdmission
    private let dropped = DroppedEventCounter()

    /// Clients connected now (the metrics' `accessd_socket_clients`).
    public var connectedClients: Int { admission.connected }
    /// Events dropped for subscribers that did not keep up, since start, over all clients.
    public var droppedEvents: Int { dropped.total }

    public init(
        path: String, group: gid_t?, eventLimit: Int, limits: ClientLimits = ClientLimits(), logger: Logger,
        handler: any ControlRequestHandler, roleOf: @escaping @Sendable (PeerIdentity) -> Role
    ) {
        self.admission = ClientAdmission(limits: limits)
        self.path = path
        self.group = group
        self.handler = handler
        self.roleOf = roleOf
        self.eventLimit = eventLimit
        self.logger = logger
    }

    /// Binds, then serves until the task is cancelled; removes the socket file on the way out.
    /// `onReady` runs once the socket accepts connections.
    public func run(onReady: @Sendable () -> Void = {}) async throws {
        let stop = ListenerStop()
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelInitializer { listener in
                listener.eventLoop.makeCompletedFuture {
                    try listener.pipeline.syncOperations.addHandler(stop.counter())
                }
            }
            // A client may write its requests and shut its side down (socat, `echo … |`):
            // its answers are still written before the connection closes.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            // Never over an existing file: `SocketPath.claim` removed it if it was stale.
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: false) { channel in
                PeerIdentity.of(channel).flatMapThrowing {
                    identity -> (NIOAsyncChannel<ByteBuffer, ByteBuffer>, PeerIdentity?) in
                    try channel.pipeline.syncOperations.addHandler(HangUpWatcher())
                    let wrapped = try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                        wrappingChannelSynchronously: channel,
                        configuration: .init(isOutboundHalfClosureEnabled: true))
                    return (wrapped, identity)
                }
            }
        let ownFile = SocketPath.OwnFile(path: path)
        defer { ownFile?.removeIfStillOurs() }
        chmod(path, 0o660)
        if let group, chown(path, UInt32.max, group) != 0 {
            throw SocketPath.InUse(
                description: "cannot give \(path) to group \(group): \(String(cString: strerror(errno)))")
        }
        onReady()
        logger.info("control socket listening", metadata: ["path": "\(path)"])

        // The accept loop is a task of its own, which the stop does not cancel: a cancelled
        // loop leaves connections NIO accepted untaken, and NIO traps on each (`ListenerStop`).
        // The stop closes the listener once the loop has them all; then every client, served
        // or just arrived, is cancelled, which closes its connection.
        let acceptor = Task {
            try await withThrowingDiscardingTaskGroup { tasks in
                try await server.executeThenClose { connections in
                    for try await (connection, identity) in connections {
                        stop.took()
                        tasks.addTask { await self.serve(connection, identity: identity) }
                    }
                }
                tasks.cancelAll()
            }
        }
        try await withTaskCancellationHandler {
            try await acceptor.value
        } onCancel: {
            Task { await stop.close(server.channel) }
        }
    }

    private func serve(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>, identity: PeerIdentity?) async {
        // Without credentials nobody is trusted beyond reading.
        let role = identity.map(roleOf) ?? .observer
        if case .refused(let limit, let first) = admission.admit(role) {
            await refuse(connection, error: .tooManyClients(limit))
            if first {
                logger.warning(
                    "clients refused: the socket is full",
                    metadata: [
                        "limit": "\(limit)", "role": "\(role)",
                        "uid": "\(identity?.uid ?? UInt32.max)",
                    ])
            }
            return
        }
        defer { admission.leave() }
        let channel = connection.channel
        let watcher = try? await channel.pipeline.handler(type: HangUpWatcher.self).get()
        let client = ControlClient(
            id: clientIDs.next(), role: role, uid: identity?.uid ?? UInt32.max,
            pid: identity?.pid ?? -1, eventLimit: eventLimit, dropped: dropped, watcher: watcher)
        logger.debug(
            "client connected", metadata: ["client": "\(client.id)", "uid": "\(client.uid)", "role": "\(role)"])
        enum Side { case reader, writer, idle, stalled }
        do {
            try await connection.executeThenClose { inbound, outbound in
                try await withThrowingTaskGroup(of: Side.self) { group in
                    group.addTask {
                        while let line = await client.outbox.next() {
                            var buffer = ByteBuffer(string: line)
                            buffer.writeInteger(UInt8(ascii: "\n"))
                            // The write waits while the client's socket is full.
                            client.activity.withLockedValue { $0.writeWaitingSince = .now }
                            try await outbound.write(buffer)
                            client.activity.withLockedValue { $0.writeWaitingSince = nil }
                        }
                        return .writer
                    }
                    group.addTask {
                        // What is queued is still written (answers to requests already read).
                        defer { client.outbox.finish() }
                        try await self.read(inbound, client: client)
                        return .reader
                    }
                    group.addTask {
                        try await self.closeWhenIdle(client)
                        return .idle
                    }
                    group.addTask {
                        try await self.closeWhenNotReading(client, channel: channel)
                        return .stalled
                    }
                    // The reader ending (the client shut its side, or misbehaved) or the idle
                    // timeout lets the writer drain; the writer ending (the client is gone, or
                    // all is written) ends the rest. A client that does not read ends the
                    // writer too: closing the channel fails its waiting write.
                    while let side = try await group.next(), side != .writer {}
                    client.outbox.close()
                    group.cancelAll()
                }
            }
        } catch {
            logger.debug("client connection ended", metadata: ["client": "\(client.id)", "error": "\(error)"])
        }
        client.outbox.close()
        await handler.disconnected(client)
        logger.debug("client disconnected", metadata: ["client": "\(client.id)"])
    }

    /// One error line to a client that is not served, then the connection closes.
    private func refuse(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>, error: RPCError) async {
        try? await connection.executeThenClose { _, outbound in
            var buffer = ByteBuffer(string: RPCRequest.errorResponse(id: nil, error: error))
            buffer.writeInteger(UInt8(ascii: "\n"))
            try await outbound.write(buffer)
        }
    }

    /// Returns once the client has been idle for the timeout (nothing sent, no request under
    /// way, no subscription), after queueing the notice; cancelled when the connection ends.
    private func closeWhenIdle(_ client: ControlClient) async throws {
        let timeout = admission.limits.idleTimeout
        while true {
            let activity = client.activity.withLockedValue { $0 }
            let now = ContinuousClock.now
            if activity.isIdle(at: now, timeout: timeout) { break }
            // Wake when the client would be idle if nothing happens meanwhile.
            let due = activity.lastHeard + timeout
            try await Task.sleep(for: max(due - now, timeout / 10))
        }
        logger.debug("client closed: idle", metadata: ["client": "\(client.id)"])
        _ = client.outbox.pushResponse(RPCRequest.errorResponse(id: nil, error: .idle(timeout)), force: true)
        client.outbox.finish()
    }

    /// Returns after closing the connection of a client that has let a write wait for the
    /// send timeout: it does not read, so nothing more it is sent (not even why it is closed)
    /// can reach it. Cancelled when the connection ends.
    private func closeWhenNotReading(_ client: ControlClient, channel: any Channel) async throws {
        let timeout = admission.limits.sendTimeout
        while true {
            let waitingSince = client.activity.withLockedValue { $0.writeWaitingSince }
            let now = ContinuousClock.now
            if let waitingSince, now - waitingSince >= timeout { break }
            // A write that starts waiting now is looked at again within the timeout.
            try await Task.sleep(for: waitingSince.map { $0 + timeout - now } ?? timeout)
        }
        logger.notice(
            "client dropped: not reading",
            metadata: [
                "client": "\(client.id)", "uid": "\(client.uid)",
                "timeout": "\(timeout)",
            ])
        try? await channel.close()
    }

    /// Reads lines (swift-nio-extras' `LineBasedFrameDecoder`, `\n` or `\r\n`), at most
    /// `maximumLineLength` bytes waiting: past that, one `lineTooLong` answer, then hang up.
    private func read(_ inbound: NIOAsyncChannelInboundStream<ByteBuffer>, client: ControlClient) async throws {
        do {
            for try await line in inbound.decode(
                using: LineBasedFrameDecoder(), maximumBufferSize: Self.maximumLineLength)
            {
                client.activity.withLockedValue { $0.lastHeard = .now }
                // The decoder's bound is on what it buffers, checked between reads: a longer
                // line arriving in one read got through (up to 128 KiB, issue #17).
                guard line.readableBytes <= Self.maximumLineLength else {
                    _ = client.outbox.pushResponse(RPCRequest.errorResponse(id: nil, error: .lineTooLong))
                    return
                }
                guard let text = String(validating: line.readableBytesView, as: UTF8.self) else {
                    _ = client.outbox.pushResponse(RPCRequest.errorResponse(id: nil, error: .parseError("not UTF-8")))
                    continue
                }
                guard try await answer(text, client: client) else { return }
            }
        } catch is ByteToMessageDecoderError.PayloadTooLargeError {
            // A line this long is an attack or a bug: answer once, then hang up.
            _ = client.outbox.pushResponse(RPCRequest.errorResponse(id: nil, error: .lineTooLong))
        } catch is NIOExtrasErrors.LeftOverBytesError {
            // A final line without a newline is half-written: dropped.
        }
    }

    /// Answers one line; false when the client must be disconnected.
    private func answer(_ trimmed: String, client: ControlClient) async throws -> Bool {
        if trimmed.allSatisfy({ $0 == " " || $0 == "\t" }) { return true }
        // Reading stops while too many answers wait to be written; a client that does not
        // read at all is told so (-32003) and hung up on.
        guard await client.outbox.waitForRoom(patience: Self.unreadPatience) else {
            logger.notice("client dropped: too many unanswered requests", metadata: ["client": "\(client.id)"])
            _ = client.outbox.pushResponse(RPCRequest.errorResponse(id: nil, error: .tooManyPending), force: true)
            return false
        }
        switch RPCRequest.parse(trimmed) {
        case .failure(let failure):
            return client.outbox.pushResponse(RPCRequest.errorResponse(id: failure.id, error: failure.error))
        case .success(let request):
            if ControlMethod(rawValue: request.method)?.holdsEventsUntilAnswered ?? true {
                client.outbox.beginRequest()
            }
            client.activity.withLockedValue { $0.requestUnderWay = true }
            let result = await handler.handle(request, from: client)
            client.activity.withLockedValue {
                $0.requestUnderWay = false
                $0.lastHeard = .now
            }
            // A request without an id is a notification: no answer (JSON-RPC 2.0 §4.1).
            guard request.id != nil else {
                client.outbox.endRequest()
                return true
            }
            let text: String
            switch result {
            case .success(let value): text = RPCRequest.response(id: request.id, result: value)
            case .failure(let error): text = RPCRequest.errorResponse(id: request.id, error: error)
            }
            guard client.outbox.pushResponse(text) else {
                logger.notice("client dropped: too many unanswered requests", metadata: ["client": "\(client.id)"])
                return false
            }
            return true
        }
    }
}

final class ClientCounter: Sendable {
    private let value = NIOLockedValueBox<UInt64>(0)
    func next() -> UInt64 {
        value.withLockedValue { value in
            value += 1
            return value
        }
    }
}
