import AccessJSON
import AccessStore
import ControlSocket
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

#if canImport(Glibc)
    import Glibc
#endif

/// Serves `/metrics` (docs/operations.md, "Metrics") on `[metrics] listen` until cancelled,
/// and follows the journal into the metrics meanwhile. Off unless configured.
public struct MetricsExporter: Sendable {
    public struct Surroundings: Sendable {
        public var socketClients: Int
        public var socketDroppedEvents: Int
        public var bluezCallFailures: [String: Int]

        public init(socketClients: Int, socketDroppedEvents: Int, bluezCallFailures: [String: Int]) {
            self.socketClients = socketClients
            self.socketDroppedEvents = socketDroppedEvents
            self.bluezCallFailures = bluezCallFailures
        }
    }

    static let maximumConnections = 16

    let endpoint: MetricsEndpoint
    let daemon: AccessDaemonServices
    /// What the parts around the daemon count (the socket server, the BlueZ client).
    let surroundings: @Sendable () -> Surroundings
    let logger: Logger

    public init(
        endpoint: MetricsEndpoint, daemon: AccessDaemonServices, logger: Logger,
        surroundings: @escaping @Sendable () -> Surroundings
    ) {
        self.endpoint = endpoint
        self.daemon = daemon
        self.surroundings = surroundings
        self.logger = logger
    }

    public func run() async {
        let metrics = DaemonMetrics()
        let follower = Task { await follow(into: metrics) }
        defer { follower.cancel() }
        let daemon = self.daemon
        let surroundings = self.surroundings
        let render: @Sendable () async -> [UInt8] = {
            var snapshot = await daemon.metricsSnapshot()
            let around = surroundings()
            snapshot.socketClients = around.socketClients
            snapshot.socketDroppedEvents = around.socketDroppedEvents
            snapshot.bluezCallFailures = around.bluezCallFailures
            metrics.refresh(snapshot)
            return metrics.render()
        }
        let connections = MetricsConnections(limit: Self.maximumConnections)
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 16)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // A scraper that sends its request and shuts its side (`printf … | socat -`) is
            // answered before the connection closes; NIO's HTTP pipeline closes after the last
            // answer (issue #33: it got 0 bytes).
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                guard connections.admit(channel) else {
                    // Every connection is mid-request: say so rather than close in silence.
                    let busy = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    return channel.writeAndFlush(ByteBuffer(string: busy)).flatMap { channel.close() }
                }
                channel.closeFuture.whenComplete { _ in connections.release(channel) }
                return channel.eventLoop.makeCompletedFuture {
                    // A scraper that sends and never reads: socket reads stop once the answers
                    // it has not read fill the channel's write buffer (issue #33: one pipelining
                    // connection grew RSS by 400 MB in 30 s).
                    try channel.pipeline.syncOperations.addHandler(BackPressureHandler())
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: false)
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(allTimeout: .seconds(30)))
                    try channel.pipeline.syncOperations.addHandler(
                        MetricsHTTPHandler(render: render, busy: { connections.setBusy(channel, $0) }))
                }
            }
        let server: any Channel
        do {
            switch endpoint {
            case .tcp(let host, let port): server = try await bootstrap.bind(host: host, port: port).get()
            case .unix(let path):
                server = try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).get()
                // Readable by the kiosk's own scrapers (node exporter, Grafana Alloy run as
                // their own users): the unit's UMask=0077 made it 0700 (issue #33). The
                // metrics carry no secret; the directory it is in decides who reaches it.
                chmod(path, 0o666)
            }
        } catch {
            // Doors matter more than metrics: accessd goes on without them, and says why.
            logger.error("metrics cannot be served", metadata: ["listen": "\(endpoint)", "error": "\(error)"])
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
            return
        }
        logger.info("metrics served", metadata: ["listen": "\(endpoint)", "path": "/metrics"])
        await withTaskCancellationHandler {
            try? await server.closeFuture.get()
        } onCancel: {
            server.close(promise: nil)
        }
    }

    /// Every event journalled from now on, into the metrics.
    private func follow(into metrics: DaemonMetrics) async {
        let journal = daemon.journal
        var cursor = journal.lastSequence
        let (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let token = journal.watch(kinds: nil) { wake.yield() }
        defer { journal.unwatch(token) }
        for await _ in wakes {
            while let events = try? journal.store.events(after: cursor, limit: 1000), !events.isEmpty {
                for event in events {
                    metrics.record(event)
                    cursor = event.sequence
                }
            }
        }
    }
}
