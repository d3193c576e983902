import AccessCore
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOTLS

/// One HTTP/1.1 request to a site on a connection of its own (SwiftNIO, NIOSSL). Written here
/// rather than taken from AsyncHTTPClient, which accessd used before: a pinned site's key
/// (`[site] pins`, issue #32) must be checked after the TLS handshake has verified the
/// certificate and before a byte of the request is sent, and AsyncHTTPClient exposes neither
/// its connections nor a verification hook. A kiosk calls its site a few times a minute (a
/// sync, the change channel's long poll, an audit batch), so a connection per call
/// (`Connection: close`) costs nothing a pool would save.
struct SiteTransport: Sendable {
    struct Request: Sendable {
        var site: SiteAddress
        var method: HTTPMethod
        /// The path and query from the site's root (`site.pathPrefix` included).
        var target: String
        var headers: HTTPHeaders
        var body: [UInt8]?
    }

    /// The site's key is not among `[site] pins`.
    struct KeyNotPinned: Error {
        var presented: String
        var pinned: [String]
    }

    /// The answer ended with the connection before its end (a site that closed mid-answer).
    struct AnswerCutShort: Error, CustomStringConvertible {
        var description: String { "remoteConnectionClosed before the answer's end" }
    }

    private let tls: NIOSSLContext
    private let pins: SitePins?
    private let connectTimeout: TimeAmount
    private let maximumAnswer: Int

    /// `caFile`: PEM file of the CAs to trust instead of the system's.
    init(caFile: String?, pins: SitePins?, connectTimeout: TimeAmount, maximumAnswer: Int) throws {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let caFile { configuration.trustRoots = .file(caFile) }
        tls = try NIOSSLContext(configuration: configuration)
        self.pins = pins
        self.connectTimeout = connectTimeout
        self.maximumAnswer = maximumAnswer
    }

    /// The status and body. Bounded: the connect by `connectTimeout`, the body by
    /// `maximumAnswer` (`NIOTooManyBytesError`); the whole call's deadline is the caller's
    /// (cancelling the task closes the connection).
    func send(_ request: Request) async throws -> (status: Int, body: ByteBuffer) {
        let secure = request.site.scheme == .https
        let host = request.site.host
        let port = request.site.port ?? (secure ? 443 : 80)
        let handshake = MultiThreadedEventLoopGroup.singleton.any().makePromise(of: Void.self)
        // Ended however the connection goes (a promise left pending is a leak NIO reports).
        defer { handshake.fail(ChannelError.ioOnClosedChannel) }
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(connectTimeout)
            .connect(host: host, port: port) { [tls] channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if secure {
                        // SNI and the certificate's name check take a DNS name, not an address.
                        let name = host.contains(":") || host.allSatisfy({ $0.isNumber || $0 == "." }) ? nil : host
                        try pipeline.addHandler(NIOSSLClientHandler(context: tls, serverHostname: name))
                        try pipeline.addHandler(HandshakeWatch(handshake))
                    } else {
                        handshake.succeed(())
                    }
                    try pipeline.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(
                        wrappingChannelSynchronously: channel)
                }
            }
        // The caller's deadline cancels this task; closing the connection then ends whatever
        // waits on it (a handshake a silent server never answers is not otherwise cancellable,
        // and the caller's task group would wait for it).
        return try await withTaskCancellationHandler {
            try await exchange(request, on: channel, secure: secure, handshake: handshake.futureResult)
        } onCancel: {
            channel.channel.close(promise: nil)
        }
    }

    private func exchange(
        _ request: Request, on channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>,
        secure: Bool, handshake: EventLoopFuture<Void>
    ) async throws -> (status: Int, body: ByteBuffer) {
        try await channel.executeThenClose { inbound, outbound in
            // Nothing is written before the handshake has ended and the key is known good.
            try await handshake.get()
            if secure, let pins {
                guard let leaf = try await channel.channel.nioSSL_peerCertificate().get() else {
                    throw KeyNotPinned(presented: "(no certificate)", pinned: pins.pins)
                }
                let presented = try SitePins.pin(of: leaf)
                guard pins.contains(presented) else { throw KeyNotPinned(presented: presented, pinned: pins.pins) }
            }
            var head = HTTPRequestHead(version: .http1_1, method: request.method, uri: request.target)
            head.headers = request.headers
            head.headers.replaceOrAdd(name: "Host", value: hostHeader(request.site))
            head.headers.replaceOrAdd(name: "Connection", value: "close")
            head.headers.replaceOrAdd(name: "Content-Length", value: "\(request.body?.count ?? 0)")
            try await outbound.write(.head(head))
            if let body = request.body, !body.isEmpty {
                try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body))))
            }
            try await outbound.write(.end(nil))
            return try await read(inbound)
        }
    }

    private func read(_ inbound: NIOAsyncChannelInboundStream<HTTPClientResponsePart>) async throws
        -> (status: Int, body: ByteBuffer)
    {
        var status: Int?
        var body = ByteBuffer()
        for try await part in inbound {
            switch part {
            case .head(let head):
                // An interim answer (100 Continue) is not the answer.
                if head.status.code >= 200 { status = Int(head.status.code) }
            case .body(var chunk):
                guard body.readableBytes + chunk.readableBytes <= maximumAnswer else {
                    throw NIOTooManyBytesError(maxBytes: maximumAnswer)
                }
                body.writeBuffer(&chunk)
            case .end:
                guard let status else { continue }
                return (status, body)
            }
        }
        throw AnswerCutShort()
    }

    private func hostHeader(_ site: SiteAddress) -> String {
        let host = site.host.contains(":") ? "[\(site.host)]" : site.host
        return site.port.map { "\(host):\($0)" } ?? host
    }
}

/// Ends `promise` with the TLS handshake: succeeded when it completed, failed with the
/// reason (an untrusted certificate, a name mismatch) or when the connection closed first.
private final class HandshakeWatch: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let promise: EventLoopPromise<Void>

    init(_ promise: EventLoopPromise<Void>) { self.promise = promise }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event { promise.succeed(()) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(ChannelError.eof)
        context.fireChannelInactive()
    }
}
