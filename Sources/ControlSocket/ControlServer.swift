import Logging
import NIOCore
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

    init(id: UInt64, role: Role, uid: UInt32, pid: Int32, eventLimit: Int) {
        self.id = id
        self.role = role
        self.uid = uid
        self.pid = pid
        self.outbox = ClientOutbox(eventLimit: eventLimit)
    }

    /// Queues an event notification for this client; never blocks, never grows without bound.
    public func deliver(sequence: Int64, notification: String) {
        outbox.pushEvent(sequence: sequence, line: notification)
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

    public let path: String
    private let group: gid_t?
    private let handler: any ControlRequestHandler
    private let roleOf: @Sendable (_ uid: UInt32, _ gid: UInt32) -> Role
    private let eventLimit: Int
    private let logger: Logger
    private let clientIDs = ClientCounter()

    public init(path: String, group: gid_t?, eventLimit: Int, logger: Logger, handler: any ControlRequestHandler,
                roleOf: @escaping @Sendable (_ uid: UInt32, _ gid: UInt32) -> Role) {
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
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 64)
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true) { channel in
                Self.peerCredentials(channel).flatMapThrowing { credentials -> (NIOAsyncChannel<ByteBuffer, ByteBuffer>, Credentials) in
                    let wrapped = try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    return (wrapped, Credentials(value: credentials))
                }
            }
        chmod(path, 0o660)
        if let group { chown(path, UInt32.max, group) }
        defer { unlink(path) }
        onReady()
        logger.info("control socket listening", metadata: ["path": "\(path)"])

        try await withTaskCancellationHandler {
            try await withThrowingDiscardingTaskGroup { tasks in
                try await server.executeThenClose { connections in
                    for try await (connection, credentials) in connections {
                        tasks.addTask { await self.serve(connection, credentials: credentials.value) }
                    }
                }
            }
        } onCancel: {
            server.channel.close(promise: nil)
        }
    }

    /// `struct ucred { pid_t pid; uid_t uid; gid_t gid; }` (Glibc hides it without _GNU_SOURCE).
    typealias PeerCredentials = (pid: Int32, uid: UInt32, gid: UInt32)

    private static func peerCredentials(_ channel: Channel) -> EventLoopFuture<PeerCredentials?> {
        guard let provider = channel as? SocketOptionProvider else { return channel.eventLoop.makeSucceededFuture(nil) }
        return provider.unsafeGetSocketOption(level: .socket, name: .init(rawValue: SO_PEERCRED))
            .map { (value: PeerCredentials) -> PeerCredentials? in value }
            .recover { _ in nil }
    }

    private func serve(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>, credentials: PeerCredentials?) async {
        // Without credentials nobody is trusted beyond reading.
        let role = credentials.map { roleOf($0.uid, $0.gid) } ?? .observer
        let client = ControlClient(id: clientIDs.next(), role: role, uid: credentials?.uid ?? UInt32.max,
                                   pid: credentials?.pid ?? -1, eventLimit: eventLimit)
        logger.debug("client connected", metadata: ["client": "\(client.id)", "uid": "\(client.uid)", "role": "\(role)"])
        do {
            try await connection.executeThenClose { inbound, outbound in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        while let line = await client.outbox.next() {
                            var buffer = ByteBuffer(string: line)
                            buffer.writeInteger(UInt8(ascii: "\n"))
                            try await outbound.write(buffer)
                        }
                    }
                    group.addTask {
                        defer { client.outbox.close() }
                        try await self.read(inbound, client: client)
                    }
                    // Whichever ends first (the client closed, or it misbehaved) ends both.
                    try await group.next()
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

    private func read(_ inbound: NIOAsyncChannelInboundStream<ByteBuffer>, client: ControlClient) async throws {
        var pending: [UInt8] = []
        for try await var chunk in inbound {
            guard let bytes = chunk.readBytes(length: chunk.readableBytes) else { continue }
            pending += bytes
            var start = pending.startIndex
            while let newline = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[start..<newline], as: UTF8.self)
                start = newline + 1
                guard try await answer(line, client: client) else { return }
            }
            pending.removeSubrange(..<start)
            if pending.count > Self.maximumLineLength {
                // A line this long is an attack or a bug: answer once, then hang up.
                _ = client.outbox.pushResponse(RPCRequest.errorResponse(id: nil, error: .lineTooLong))
                return
            }
        }
        // A final line without a newline is half-written: dropped.
    }

    /// Answers one line; false when the client must be disconnected.
    private func answer(_ line: String, client: ControlClient) async throws -> Bool {
        let trimmed = line.hasSuffix("\r") ? String(line.dropLast()) : line
        if trimmed.allSatisfy({ $0 == " " || $0 == "\t" }) { return true }
        switch RPCRequest.parse(trimmed) {
        case let .failure(failure):
            return client.outbox.pushResponse(RPCRequest.errorResponse(id: failure.id, error: failure.error))
        case let .success(request):
            client.outbox.beginRequest()
            let result = await handler.handle(request, from: client)
            // A request without an id is a notification: no answer (JSON-RPC 2.0 §4.1).
            guard request.id != nil else {
                client.outbox.endRequest()
                return true
            }
            let text: String
            switch result {
            case let .success(value): text = RPCRequest.response(id: request.id, result: value)
            case let .failure(error): text = RPCRequest.errorResponse(id: request.id, error: error)
            }
            guard client.outbox.pushResponse(text) else {
                logger.notice("client dropped: too many unanswered requests", metadata: ["client": "\(client.id)"])
                return false
            }
            return true
        }
    }
}

/// Sendable box for the peer credentials tuple.
struct Credentials: Sendable {
    var value: ControlServer.PeerCredentials?
}

final class ClientCounter: @unchecked Sendable {
    private var value: UInt64 = 0
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    init() { pthread_mutex_init(mutex, nil) }
    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }
    func next() -> UInt64 {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        value += 1
        return value
    }
}
