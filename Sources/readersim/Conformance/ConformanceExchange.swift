import AccessCore
import Crypto
import Foundation

/// A whole exchange as a holder runs it (accessd's own `CredentialSession`), over one link,
/// with what the holder wrote kept for the replay check.
struct ConformanceExchange {
    var outcome: ExchangeOutcome
    /// The fragments the holder wrote, in order.
    var written: [[UInt8]]

    /// Runs `operation` with `presentation`, fragmenting what the holder sends for `mtu`.
    /// The reader's fragments go to the session as they came: it reassembles and judges them.
    static func run(
        on link: ConformanceLink, credential: ConformanceCredential, presentation: CredentialSession.Presentation,
        operation: ExchangeOperation, mtu: Int, standing: StandingChallenge.Handover? = nil,
        replayGuard: inout ChallengeReplayGuard
    ) async -> ConformanceExchange {
        var session = CredentialSession(
            readerID: credential.readerID, siteTag: credential.siteTag,
            sitePublicKey: credential.siteKey, presentation: presentation,
            operation: operation, mtu: mtu, certificates: credential.trust)
        if let standing { session.takeOver(standing) }
        var written: [[UInt8]] = []
        var deadline: ContinuousClock.Instant?
        var pending = session.handle(.connected, replayGuard: &replayGuard)
        while true {
            while !pending.isEmpty {
                let action = pending.removeFirst()
                switch action {
                case .send(let fragments):
                    for fragment in fragments {
                        written.append(fragment)
                        do throws(ConformanceFailure) {
                            try await link.write(fragment)
                        } catch {
                            return ConformanceExchange(outcome: .failed(.remoteClose), written: written)
                        }
                    }
                case .startTimer(let after):
                    deadline = ContinuousClock.now + after
                case .cancelTimer:
                    deadline = nil
                case .requestSecondFactor:
                    // The conformance credential has no second-factor key.
                    pending += session.handle(
                        .secondFactorUnavailable(.secondFactorRequired), replayGuard: &replayGuard)
                case .finish(let outcome):
                    return ConformanceExchange(outcome: outcome, written: written)
                }
            }
            switch await link.nextFragment(by: deadline ?? ContinuousClock.now + .seconds(30)) {
            case .fragment(let fragment):
                pending = session.handle(.fragmentReceived(fragment), replayGuard: &replayGuard)
            case .dropped:
                pending = session.handle(.disconnected, replayGuard: &replayGuard)
            case .nothingBy:
                pending = session.handle(.timerFired, replayGuard: &replayGuard)
            }
        }
    }
}

/// The credential the conformance run registered at the reader's site, and the reader.
struct ConformanceCredential: Sendable {
    var readerID: ReaderID
    var siteTag: SiteTag
    var siteKey: P256.Signing.PublicKey
    var id: CredentialID
    var key: P256.Signing.PrivateKey

    var presentation: CredentialSession.Presentation { .mobile(id, key) }

    /// What the holder trusts of a version 3 reader: certificates the registered site key
    /// signed, valid now (the run withdraws none).
    var trust: CertificateTrust {
        CertificateTrust(
            chain: SiteKeyChain(registered: siteKey, siteTag: siteTag, statements: []),
            now: Date().timeIntervalSince1970)
    }
}
