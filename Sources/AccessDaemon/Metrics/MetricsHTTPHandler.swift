import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// One scraper's connection: `GET /metrics` answered with the text exposition format, `404`
/// for any other path, `405` for any other method. A request body (none is expected) over
/// 64 KiB, or a connection idle for 30 s, closes the connection; the server admits at most
/// `MetricsExporter.maximumConnections` at once. A request is answered only while the
/// connection is writable: NIO's pipelining handler hands over the next request as soon as an
/// answer's end is written, not sent, so a client that pipelines and never reads had every
/// request it sent answered into memory (issue #33). One request waits instead; the
/// `BackPressureHandler` in front stops reading the socket meanwhile. A classic handler rather than an async
/// channel: closing the listener then never strands an accepted connection (swift-nio #2813).
final class MetricsHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let maximumBody = 64 * 1024

    private let render: @Sendable () async -> [UInt8]
    private var head: HTTPRequestHead?
    private var bodyBytes = 0
    /// A request whose answer waits for the connection to become writable again.
    private var waiting: HTTPRequestHead?

    /// Told when a request begins and when its answer is written (`MetricsConnections`).
    private let busy: @Sendable (Bool) -> Void

    init(render: @escaping @Sendable () async -> [UInt8], busy: @escaping @Sendable (Bool) -> Void = { _ in }) {
        self.render = render
        self.busy = busy
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            head = request
            bodyBytes = 0
            busy(true)
        case .body(let buffer):
            bodyBytes += buffer.readableBytes
            if bodyBytes > Self.maximumBody { context.close(promise: nil) }
        case .end:
            guard let request = head else { return }
            head = nil
            if context.channel.isWritable {
                answer(request, context: context)
            } else {
                waiting = request
            }
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let request = waiting {
            waiting = nil
            answer(request, context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    private func answer(_ request: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = request.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.uri
        guard path == "/metrics" else {
            respond(
                context, request, status: .notFound, type: "text/plain; charset=utf-8",
                body: Array("not found: try /metrics\n".utf8))
            return
        }
        guard request.method == .GET || request.method == .HEAD else {
            respond(
                context, request, status: .methodNotAllowed, type: "text/plain; charset=utf-8",
                body: Array("only GET\n".utf8), extra: [("Allow", "GET, HEAD")])
            return
        }
        let render = self.render
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        Task {
            let body = await render()
            loopBound.eventLoop.execute {
                let (handler, context) = loopBound.value
                handler.respond(
                    context, request, status: .ok, type: "text/plain; version=0.0.4; charset=utf-8",
                    body: request.method == .HEAD ? [] : body, length: body.count)
            }
        }
    }

    private func respond(
        _ context: ChannelHandlerContext, _ request: HTTPRequestHead, status: HTTPResponseStatus,
        type: String, body: [UInt8], length: Int? = nil, extra: [(String, String)] = []
    ) {
        var headers = HTTPHeaders([("Content-Type", type), ("Content-Length", String(length ?? body.count))] + extra)
        if !request.isKeepAlive { headers.add(name: "Connection", value: "close") }
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))),
            promise: nil)
        if !body.isEmpty { context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil) }
        let busy = self.busy
        if request.isKeepAlive {
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in busy(false) }
        } else {
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Malformed HTTP: nothing to answer on this connection.
        context.close(promise: nil)
    }
}
