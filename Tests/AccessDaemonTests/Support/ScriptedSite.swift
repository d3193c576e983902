import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// A site that answers every request with the next of a fixed list of answers (the last one
/// repeats), to play a hostile or broken site against `SiteClient` byte for byte. It records
/// what it was asked.
final class ScriptedSite: Sendable {
    struct Answer: Sendable {
        var status: Int
        var body: String
        /// Sends the body one byte per this interval instead of at once.
        var dribble: Duration? = nil
    }

    struct Request: Sendable {
        var method: String
        var target: String
        var body: String
    }

    /// Answers a request by what it asks (`index`: how many came before it).
    typealias Route = @Sendable (_ request: Request, _ index: Int) -> Answer

    private let channel: any Channel
    private let state: NIOLockedValueBox<(answers: [Answer], requests: [Request])>

    var port: Int { channel.localAddress?.port ?? 0 }
    var requests: [Request] { state.withLockedValue { $0.requests } }

    convenience init(answers: [Answer]) async throws {
        try await self.init(route: nil, answers: answers)
    }

    convenience init(route: @escaping Route) async throws {
        try await self.init(route: route, answers: [])
    }

    private init(route: Route?, answers: [Answer]) async throws {
        let state = NIOLockedValueBox((answers: answers, requests: [Request]()))
        self.state = state
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler(state: state, route: route))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    func stop() async {
        try? await channel.close()
    }

    private final class Handler: ChannelInboundHandler, @unchecked Sendable {
        /// One byte, then the rest later, on the channel's event loop.
        func dribble(_ rest: ArraySlice<UInt8>, every interval: Duration, context: ChannelHandlerContext) {
            guard let byte = rest.first else {
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                return
            }
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: [byte])))), promise: nil)
            let nanoseconds =
                interval.components.seconds * 1_000_000_000 + interval.components.attoseconds / 1_000_000_000
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) {
                let (handler, context) = loopBound.value
                guard context.channel.isActive else { return }
                handler.dribble(rest.dropFirst(), every: interval, context: context)
            }
        }

        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let state: NIOLockedValueBox<(answers: [Answer], requests: [Request])>
        let route: Route?
        var head: HTTPRequestHead?
        var body = ByteBuffer()

        init(state: NIOLockedValueBox<(answers: [Answer], requests: [Request])>, route: Route?) {
            self.state = state
            self.route = route
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                self.head = head
                body.clear()
            case .body(var part):
                body.writeBuffer(&part)
            case .end:
                let request = Request(
                    method: head?.method.rawValue ?? "", target: head?.uri ?? "",
                    body: String(buffer: body))
                let (answer, index) = state.withLockedValue { state in
                    state.requests.append(request)
                    if route != nil { return (Answer(status: 0, body: ""), state.requests.count - 1) }
                    return (state.answers.count > 1 ? state.answers.removeFirst() : state.answers[0], 0)
                }
                let routed = route.map { $0(request, index) } ?? answer
                var headers = HTTPHeaders()
                headers.add(name: "Content-Type", value: "application/json")
                headers.add(name: "Content-Length", value: String(routed.body.utf8.count))
                context.write(
                    wrapOutboundOut(
                        .head(
                            HTTPResponseHead(
                                version: .http1_1, status: HTTPResponseStatus(statusCode: routed.status),
                                headers: headers))),
                    promise: nil)
                if let interval = routed.dribble {
                    context.flush()
                    dribble(Array(routed.body.utf8)[...], every: interval, context: context)
                    return
                }
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: routed.body)))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}
