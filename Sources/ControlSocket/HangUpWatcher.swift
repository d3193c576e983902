import NIOConcurrencyHelpers
import NIOCore

/// Notes, first in a client's pipeline, when the client stops sending: end of input (it closed
/// or shut its side) or the channel going away. The server reads a client's requests one at a
/// time, so the end of input queues behind a request being answered; a long request (a probe)
/// asks this instead whether anyone still waits for it.
final class HangUpWatcher: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let flag = NIOLockedValueBox(false)

    var hasHungUp: Bool { flag.withLockedValue { $0 } }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { flag.withLockedValue { $0 = true } }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        flag.withLockedValue { $0 = true }
        context.fireChannelInactive()
    }
}
