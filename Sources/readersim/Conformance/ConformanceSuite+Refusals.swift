import AccessCore
import Crypto

/// §5 and §7's refusals: what a reader must answer to a holder that breaks the protocol, is
/// unknown to it, or never answers.
extension ConformanceSuite {
    /// A first fragment with a non-zero index (§5 refuses it): error `malformed`.
    mutating func malformed(_ device: String) async {
        guard let link = await openAtChallenge(device, "§5", "malformed fragment refused") else { return }
        let sent = (try? await link.write([0x81, 0x00, 0x10])) != nil
        let answer = await link.receive(within: ProtocolTimeouts().step)
        await link.close()
        if case .message(.error(.malformed)) = answer {
            record("§5", "malformed fragment refused", .pass, "first fragment with index 1: error malformed")
        } else {
            record(
                "§5", "malformed fragment refused", .fail,
                "first fragment with index 1\(sent ? "" : " (write failed)"): \(describe(answer)), not error malformed")
        }
    }

    /// A credential the site never issued: error `unknownCredential`.
    mutating func unknownCredential(_ device: String) async {
        guard let link = await open(device, "§7", "unknown credential refused") else { return }
        let bytes = (0..<16).map { _ in UInt8.random(in: 0...255) }
        guard let id = CredentialID(bytes: bytes) else { return }
        let stranger = CredentialSession.Presentation.mobile(id, P256.Signing.PrivateKey())
        let exchange = await ConformanceExchange.run(
            on: link, credential: credential, presentation: stranger,
            operation: .access, mtu: link.mtu, replayGuard: &replayGuard)
        await link.close()
        if case .failed(.invalidatedCredential) = exchange.outcome {
            record("§7", "unknown credential refused", .pass, "error unknownCredential")
        } else {
            record(
                "§7", "unknown credential refused", .fail, "\(describe(exchange.outcome)), not error unknownCredential")
        }
    }

    /// A holder that never answers the challenge: error `timeout` (or the link dropped) within
    /// 5 s; on a version 3 link, whose challenge stands (§6), not before the 30 s hold and by
    /// the refresh due after it, refreshes meanwhile.
    mutating func timeout(_ device: String) async {
        guard let link = await openAtChallenge(device, "§7", "silent holder timed out") else { return }
        let started = ContinuousClock.now
        // The wait, and 2 s for the air and the scheduler.
        let limit =
            (link.isStanding ? StandingTimings.maximumHold + StandingTimings.refresh : ProtocolTimeouts().step)
            + .seconds(2)
        var answer = await link.receive(within: limit)
        while link.isStanding, case .message(.challenge) = answer, ContinuousClock.now - started < limit {
            answer = await link.receive(within: limit - (ContinuousClock.now - started))
        }
        if link.isStanding, ContinuousClock.now - started < StandingTimings.maximumHold - .seconds(1) {
            let early = ((ContinuousClock.now - started).secondsValue * 10).rounded() / 10
            await link.close()
            record(
                "§7", "silent holder timed out", .fail,
                "\(describe(answer)) after \(early) s, before the 30 s a standing challenge is held")
            return
        }
        let waited = ContinuousClock.now - started
        await link.close()
        let after = "after \((waited.secondsValue * 10).rounded() / 10) s"
        switch answer {
        case .message(.error(.timeout)): record("§7", "silent holder timed out", .pass, "error timeout \(after)")
        case .dropped: record("§7", "silent holder timed out", .pass, "the link dropped \(after)")
        case .nothingWithin: record("§7", "silent holder timed out", .fail, "nothing \(after), not error timeout")
        default: record("§7", "silent holder timed out", .fail, "\(describe(answer)) \(after), not error timeout")
        }
    }
}
