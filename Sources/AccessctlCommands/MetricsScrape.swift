import FoundationEssentials
import NIOCore
import NIOHTTP1
import NIOPosix

/// accessd's own metrics for the diagnostics bundle: one `GET /metrics` to `[metrics] listen`
/// (a Unix socket path or HOST:PORT) with NIO's HTTP/1 client codec, bounded in time and size.
/// The bundle keeps the samples without the help and type lines and without histogram buckets
/// (what support reads; the whole text is on the kiosk).
enum MetricsScrape {
    static let limit = 262_144

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The listen value of a configuration file's `[metrics]` section, as the bundle lists it.
    static func listen(in settings: [String]) -> String? {
        var section = ""
        for line in settings {
            if line.hasPrefix("[") {
                section = line
                continue
            }
            guard section == "[metrics]", let equals = line.firstIndex(of: "="),
                line[..<equals].trimmingWhitespace() == "listen"
            else { continue }
            let value = line[line.index(after: equals)...].split(separator: "#").first ?? ""
            return value.trimmingWhitespace().trimming { $0 == "\"" }
        }
        return nil
    }

    /// The samples served at `listen`, or why not.
    static func samples(from listen: String, timeout: Duration) -> Result<[String], Failure> {
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.milliseconds(Int64(timeout.components.seconds * 1000)))
        let collector = Collector()
        let connect = bootstrap.channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHTTPClientHandlers()
                try channel.pipeline.syncOperations.addHandler(collector)
            }
        }
        do {
            let channel: any Channel
            if listen.hasPrefix("/") {
                channel = try connect.connect(unixDomainSocketPath: listen).wait()
            } else {
                guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...])
                else {
                    return .failure(Failure(description: "[metrics] listen \(listen) is neither a path nor HOST:PORT"))
                }
                let host = listen[..<colon].trimming { "[]".contains($0) }
                channel = try connect.connect(host: host.isEmpty ? "127.0.0.1" : host, port: port).wait()
            }
            let deadline = channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(timeout.nanoseconds))) {
                collector.fail(Failure(description: "no answer within \(timeout)"), channel: channel)
            }
            defer { deadline.cancel() }
            var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/metrics")
            head.headers.add(name: "Host", value: "localhost")
            head.headers.add(name: "Connection", value: "close")
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
            try channel.writeAndFlush(HTTPClientRequestPart.end(nil)).wait()
            let text = try collector.done.futureResult.wait()
            return .success(
                text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.contains("_bucket{") }.map(String.init))
        } catch let failure as Failure {
            return .failure(failure)
        } catch {
            return .failure(Failure(description: "\(error)"))
        }
    }

    /// Gathers one answer's body, at most `limit` bytes.
    private final class Collector: ChannelInboundHandler, @unchecked Sendable {
        // @unchecked: touched on the channel's event loop only, but for `done`, a promise.
        typealias InboundIn = HTTPClientResponsePart
        let done = MultiThreadedEventLoopGroup.singleton.any().makePromise(of: String.self)
        private var body = ByteBuffer()
        private var status: HTTPResponseStatus = .ok

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                status = head.status
            case .body(var part):
                guard body.readableBytes + part.readableBytes <= MetricsScrape.limit else {
                    return fail(
                        Failure(description: "more than \(MetricsScrape.limit) bytes"), channel: context.channel)
                }
                body.writeBuffer(&part)
            case .end:
                if status == .ok {
                    done.succeed(String(buffer: body))
                } else {
                    done.fail(Failure(description: "answered \(status.code)"))
                }
                context.close(promise: nil)
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            fail(Failure(description: "\(error)"), channel: context.channel)
        }

        func channelInactive(context: ChannelHandlerContext) {
            done.fail(Failure(description: "the connection closed before the answer"))
        }

        func fail(_ failure: Failure, channel: any Channel) {
            done.fail(failure)
            channel.close(promise: nil)
        }
    }
}
