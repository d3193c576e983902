import AccessCore
import BlueZTestSupport
import Foundation

/// A reader behind the fake central's control point: the core's `ReaderSession`, as readersim
/// runs it over GATT, answering as the test configures it.
final class FakeReader: FakePeripheral, @unchecked Sendable {
    enum Behaviour {
        case answer
        /// Sends its challenge, then never answers (the test drops the link or lets it time out).
        case silentAfterChallenge
    }

    private let lock = NSLock()
    private let configuration: ReaderSession.Configuration
    private var behaviour: Behaviour
    private var session: ReaderSession?
    private var finished: [ReaderSession.Report] = []

    init(_ configuration: ReaderSession.Configuration, behaviour: Behaviour = .answer) {
        self.configuration = configuration
        self.behaviour = behaviour
    }

    /// How each session with a central ended.
    var reports: [ReaderSession.Report] { lock.withLock { finished } }

    func subscribed() -> [[UInt8]] {
        lock.withLock {
            session = ReaderSession(configuration: configuration, mtu: 185)
            let nonce = (0..<16).map { _ in UInt8.random(in: 0...255) }
            let second = (0..<16).map { _ in UInt8.random(in: 0...255) }
            return run(.connected(nonce: nonce, secondFactorNonce: second))
        }
    }

    func written(_ value: [UInt8]) -> [[UInt8]] {
        lock.withLock { behaviour == .silentAfterChallenge ? [] : run(.fragmentReceived(value)) }
    }

    func disconnected() {
        lock.withLock { _ = run(.disconnected) }
    }

    /// Under the lock.
    private func run(_ input: ReaderSession.Input) -> [[UInt8]] {
        guard var current = session else { return [] }
        var sent: [[UInt8]] = []
        for action in current.handle(input) {
            switch action {
            case let .send(fragments): sent += fragments
            case let .finish(report): finished.append(report)
            case .startTimer, .cancelTimer: break  // the fake reader never times out
            }
        }
        session = current
        return sent
    }
}
