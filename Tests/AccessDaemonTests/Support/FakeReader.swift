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
    /// Version 2 readers have a hold point and keep a challenge standing when asked.
    private let protocolVersion: Int
    private var standingRequested = false
    /// Version 3 readers' hold points can be read; writing 3 asks for certified challenges.
    private var certifiedRequested = false
    private var certifiedSubscriptions = 0
    private var standingSubscriptions = 0
    private var allSubscriptions = 0
    private var written: [[UInt8]] = []

    init(_ configuration: ReaderSession.Configuration, behaviour: Behaviour = .answer, protocolVersion: Int = 1) {
        self.configuration = configuration
        self.behaviour = behaviour
        self.protocolVersion = protocolVersion
    }

    var characteristics: [String] {
        [ReaderGATT.controlPointUUID] + (protocolVersion >= 2 ? [ReaderGATT.holdPointUUID] : [])
    }

    func written(_ value: [UInt8], to characteristic: String) {
        lock.withLock {
            let holdPoint = characteristic == ReaderGATT.holdPointUUID
            certifiedRequested = holdPoint && protocolVersion >= 3 && value == [ReaderGATT.certifiedVersion]
            standingRequested = holdPoint && value == [ReaderGATT.standingVersion] || certifiedRequested
        }
    }

    func flags(of characteristic: String) -> [String] {
        characteristic == ReaderGATT.holdPointUUID && protocolVersion >= 3 ? ["read", "write"] : ["write"]
    }

    /// How many subscriptions asked for certified challenges (version 3).
    var certifiedCount: Int { lock.withLock { certifiedSubscriptions } }

    /// How many subscriptions got a standing challenge.
    var standingCount: Int { lock.withLock { standingSubscriptions } }
    /// How many times a central subscribed to the control point.
    var subscriptionCount: Int { lock.withLock { allSubscriptions } }
    /// Every fragment the central wrote to the control point, in order.
    var fragmentsWritten: [[UInt8]] { lock.withLock { written } }

    /// How each session with a central ended.
    var reports: [ReaderSession.Report] { lock.withLock { finished } }

    func subscribed() -> [[UInt8]] {
        lock.withLock {
            session = ReaderSession(configuration: configuration, mtu: 185)
            let nonce = (0..<16).map { _ in UInt8.random(in: 0...255) }
            let second = (0..<16).map { _ in UInt8.random(in: 0...255) }
            let standing = standingRequested
            let certified = certifiedRequested
            standingRequested = false
            certifiedRequested = false
            if standing { standingSubscriptions += 1 }
            if certified { certifiedSubscriptions += 1 }
            allSubscriptions += 1
            return run(.connected(nonce: nonce, secondFactorNonce: second, standing: standing, certified: certified))
        }
    }

    func written(_ value: [UInt8]) -> [[UInt8]] {
        lock.withLock {
            written.append(value)
            return behaviour == .silentAfterChallenge ? [] : run(.fragmentReceived(value))
        }
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
            case .send(let fragments): sent += fragments
            case .finish(let report): finished.append(report)
            case .startTimer, .cancelTimer, .refreshChallenge: break  // the fake reader never times out
            }
        }
        session = current
        return sent
    }
}
