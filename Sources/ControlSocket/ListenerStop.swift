import NIOConcurrencyHelpers
import NIOCore

/// Stops the control socket's listener without dropping a connection it accepted.
///
/// NIO hands accepted connections to the accept loop through a buffer. When the listening
/// channel closes, connections accepted but not yet handed over (a child still being set up,
/// or one buffered while the loop was cancelled) are dropped, and NIO traps on each
/// ("Deinited NIOAsyncWriter without calling finish()", swift-nio #2813): a client
/// connecting during `systemctl stop` crashed accessd. So the stop first turns accepting off,
/// then waits until the loop has taken every connection the listener accepted (bounded by
/// `patience`: a connection whose setup failed never arrives), and only then closes.
final class ListenerStop: Sendable {
    static let patience: Duration = .seconds(1)

    private let counts = NIOLockedValueBox((accepted: 0, taken: 0))

    /// The handler that counts what the listener accepts; first in the listener's pipeline.
    func counter() -> some ChannelInboundHandler { AcceptCounter(stop: self) }

    /// The accept loop took a connection.
    func took() {
        counts.withLockedValue { $0.taken += 1 }
    }

    fileprivate func accepted() {
        counts.withLockedValue { $0.accepted += 1 }
    }

    private var waiting: Bool {
        counts.withLockedValue { $0.taken < $0.accepted }
    }

    /// Accepts no more, lets the loop take what was accepted, then closes `listener`.
    func close(_ listener: Channel) async {
        // Runs on the listener's event loop: once set, no accept is under way or to come.
        try? await listener.setOption(ChannelOptions.autoRead, value: false).get()
        let deadline = ContinuousClock.now + Self.patience
        while waiting, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        try? await listener.close()
    }
}

/// Counts each accepted connection (the listener reads child channels) and passes it on.
private final class AcceptCounter: ChannelInboundHandler, Sendable {
    typealias InboundIn = Channel

    let stop: ListenerStop

    init(stop: ListenerStop) {
        self.stop = stop
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        stop.accepted()
        context.fireChannelRead(data)
    }
}
