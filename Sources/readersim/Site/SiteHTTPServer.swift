import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Serves `SiteAPI` over HTTP/1.1, with TLS when given a certificate and key. Database work
/// runs on NIO's thread pool so a slow disk does not stall the event loop.
///
/// Faults, for testing clients: `garbage` answers every request with bytes that are not
/// HTTP; `hang` reads requests and never answers.
final class SiteHTTPServer: Sendable {
    enum Fault: String, Sendable, CaseIterable { case garbage, hang }

    static let maximumBody = 64 * 1024

    let api: SiteAPI
    let fault: Fault?

    init(api: SiteAPI, fault: Fault?) {
        self.api = api
        self.fault = fault
    }

    /// Binds and serves until the process ends. Prints one JSON line once listening.
    func run(host: String, port: Int, tls: NIOSSLContext?) async throws {
        let api = self.api
        let fault = self.fault
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 128)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                    }
                    if fault == .garbage {
                        try channel.pipeline.syncOperations.addHandler(GarbageHandler())
                        return
                    }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(SiteHTTPHandler(api: api, hang: fault == .hang))
                }
            }
            .bind(host: host, port: port).get()
        let bound = channel.localAddress?.port ?? port
        let scheme = tls == nil ? "http" : "https"
        let shownHost = host.contains(":") ? "[\(host)]" : host
        SiteOutput.line([
            "event": "listening", "url": "\(scheme)://\(shownHost):\(bound)", "port": bound,
            "readerVersions": api.givesSiteKey ? "1-3" : "3",
        ])
        if api.givesSiteKey {
            SiteOutput.line([
                "event": "warning",
                "detail": "--legacy-readers: every provisioning page carries the site's private key; "
                    + "one stolen reader controller can speak for every reader of this site",
            ])
        }
        try await channel.closeFuture.get()
    }
}

/// One connection's requests, answered in order.
private final class SiteHTTPHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let api: SiteAPI
    let hang: Bool
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false

    init(api: SiteAPI, hang: Bool) {
        self.api = api
        self.hang = hang
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let requestHead):
            head = requestHead
            body = []
            tooLarge = false
        case .body(var buffer):
            if body.count + buffer.readableBytes > SiteHTTPServer.maximumBody {
                tooLarge = true
            } else if let bytes = buffer.readBytes(length: buffer.readableBytes) {
                body += bytes
            }
        case .end:
            guard let head, !hang else { return }
            self.head = nil
            let keepAlive = head.isKeepAlive
            if tooLarge {
                respond(context: context, .error(413, "request.tooLarge", "the body exceeds 64 KiB"), keepAlive: false)
                return
            }
            var headers: [String: String] = [:]
            for (name, value) in head.headers { headers[name.lowercased()] = value }
            let request = SiteRequest(method: head.method.rawValue, target: head.uri, headers: headers, body: body)
            let api = self.api
            let loop = context.eventLoop
            let answer = NIOThreadPool.singleton.runIfActive(eventLoop: loop) {
                api.handle(request, now: Date().timeIntervalSince1970)
            }
            let contextBox = NIOLoopBound(context, eventLoop: loop)
            answer.whenComplete { result in
                let response = (try? result.get()) ?? .error(500, "site.internal", "the site could not answer")
                self.answerWhenReady(response, request: request, loop: loop, context: contextBox, keepAlive: keepAlive)
            }
        }
    }

    /// A long poll's response waits, re-checked on the thread pool every 250 ms (no thread is
    /// held meanwhile), until it changes or its time is up.
    private func answerWhenReady(
        _ response: SiteResponse, request: SiteRequest, loop: any EventLoop,
        context: NIOLoopBound<ChannelHandlerContext>, keepAlive: Bool
    ) {
        if let recheck = response.recheck, let until = response.waitUntil, Date().timeIntervalSince1970 < until {
            loop.scheduleTask(in: .milliseconds(250)) {
                NIOThreadPool.singleton.runIfActive(eventLoop: loop) { recheck() }.whenComplete { result in
                    var next = response
                    if case .success(let changed?) = result { next = changed }
                    self.answerWhenReady(next, request: request, loop: loop, context: context, keepAlive: keepAlive)
                }
            }
            return
        }
        SiteOutput.line([
            "event": "request", "method": request.method,
            "path": String(request.target.split(separator: "?").first ?? ""), "status": response.status,
        ])
        respond(context: context.value, response, keepAlive: keepAlive)
    }

    private func respond(context: ChannelHandlerContext, _ response: SiteResponse, keepAlive: Bool) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        // Every answer is for one client at one moment (keys, cursors, states): never cached.
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "Content-Length", value: String(response.body.count))
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        let head = HTTPResponseHead(
            version: .http1_1, status: HTTPResponseStatus(statusCode: response.status),
            headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if !response.body.isEmpty {
            var buffer = context.channel.allocator.buffer(capacity: response.body.count)
            buffer.writeBytes(response.body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}

/// Answers anything with bytes that are not HTTP, then closes.
private final class GarbageHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = context.channel.allocator.buffer(capacity: 64)
        buffer.writeString("\u{1}\u{2}garbage that is not HTTP\r\n\r\n{{{\u{0}")
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(buffer)).whenComplete { _ in channel.close(promise: nil) }
    }
}

/// readersim's JSON lines on standard output, flushed per line so tests see them at once.
enum SiteOutput {
    private static let lock = NSLock()

    static func line(_ object: [String: Any]) {
        guard
            let data = try? JSONSerialization.data(
                withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return }
        lock.withLock {
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        }
    }
}
