import Testing

@testable import AccessCore

@Suite(.timeLimit(.minutes(5)))
/// Standing challenges (protocol version 2, docs/reader-protocol.md §6; issue #15, item 2):
/// over a held link the reader's challenge is already at the holder when the person reaches
/// the door, so the exchange there is one round trip: the response and the decision.
struct StandingChallengeTests {
    var reader = ReaderSession(configuration: ExchangeHarness.readerConfiguration(), mtu: 23)
    var standing = StandingChallenge(
        readerID: Fixtures.readerID, siteTag: Fixtures.siteTag,
        sitePublicKey: Fixtures.siteKey.publicKey)
    var replayGuard = ChallengeReplayGuard()
    var readerTimerArmed: Duration?
    var refreshDue = false
    var readerReport: ReaderSession.Report?

    static let nonces: [[UInt8]] = (1...10).map { n in (0..<16).map { UInt8($0) ^ UInt8(n * 17) } }

    /// What the reader notified, in fragments.
    mutating func reader(_ input: ReaderSession.Input) -> [[UInt8]] {
        var sent: [[UInt8]] = []
        for action in reader.handle(input) {
            switch action {
            case .send(let fragments): sent += fragments
            case .startTimer(let delay): readerTimerArmed = delay
            case .cancelTimer: readerTimerArmed = nil
            case .refreshChallenge: refreshDue = true
            case .finish(let report): readerReport = report
            }
        }
        return sent
    }

    mutating func hold(_ fragments: [[UInt8]], at now: Timestamp) throws(ProtocolError) {
        for fragment in fragments { try standing.receive(fragment, at: now, replayGuard: &replayGuard) }
    }

    /// The reader's refresh timer fires and it sends a fresh challenge.
    mutating func refresh(nonce: [UInt8]) -> [[UInt8]] {
        refreshDue = false
        let none = reader(.timerFired)
        #expect(none.isEmpty && refreshDue)
        return reader(.freshNonce(nonce))
    }

    static func sent(_ action: ReaderSession.Action) -> [[UInt8]] {
        if case .send(let fragments) = action { fragments } else { [] }
    }

    func session(_ handover: StandingChallenge.Handover?) -> CredentialSession {
        var session = CredentialSession(
            readerID: Fixtures.readerID, siteTag: Fixtures.siteTag,
            sitePublicKey: Fixtures.siteKey.publicKey,
            presentation: .mobile(Fixtures.credentialID, Fixtures.credentialKey),
            operation: .access)
        if let handover { session.takeOver(handover) }
        return session
    }

    /// Runs the holder's session from `connected` against the reader until both are quiet;
    /// returns the messages each side sent (whole messages, not fragments).
    mutating func door(_ holder: inout CredentialSession, extraToHolder: [[UInt8]] = [])
        -> (holderSent: Int, readerSent: Int, outcome: ExchangeOutcome?)
    {
        var outcome: ExchangeOutcome?
        var toReader: [[UInt8]] = []
        var toHolder: [[UInt8]] = extraToHolder
        var holderMessages = 0
        var readerMessages = 0
        func take(_ actions: [CredentialSession.Action]) {
            for action in actions {
                if case .send(let fragments) = action {
                    toReader += fragments
                    holderMessages += 1
                }
                if case .finish(let end) = action { outcome = end }
            }
        }
        take(holder.handle(.connected, replayGuard: &replayGuard))
        while !toReader.isEmpty || !toHolder.isEmpty {
            if !toHolder.isEmpty {
                take(holder.handle(.fragmentReceived(toHolder.removeFirst()), replayGuard: &replayGuard))
            } else {
                let sent = reader(.fragmentReceived(toReader.removeFirst()))
                if !sent.isEmpty { readerMessages += 1 }
                toHolder += sent
            }
        }
        return (holderMessages, readerMessages, outcome)
    }

    @Test mutating func atTheDoorTheExchangeIsTheResponseAndTheDecision() throws {
        try hold(
            reader(.connected(nonce: Self.nonces[0], secondFactorNonce: Self.nonces[9], standing: true)),
            at: .seconds(0))
        #expect(readerTimerArmed == StandingTimings.refresh)
        #expect(standing.newest?.nonce == Self.nonces[0])
        var holder = session(standing.handover(at: .seconds(1)))
        let door = door(&holder)
        #expect(door.outcome == .decided(AccessResult(decision: .granted, mode: .access)))
        #expect(door.holderSent == 1 && door.readerSent == 1, "one round trip: \(door)")
    }

    @Test mutating func theReaderRefreshesAndAcceptsAResponseThatCrossedTheRefresh() throws {
        try hold(
            reader(.connected(nonce: Self.nonces[0], secondFactorNonce: Self.nonces[9], standing: true)),
            at: .seconds(0))
        // The holder answers the first challenge while the reader's refresh is on its way.
        var holder = session(standing.handover(at: .seconds(3.9)))
        let crossing = refresh(nonce: Self.nonces[1])
        let door = door(&holder, extraToHolder: crossing)
        #expect(door.outcome == .decided(AccessResult(decision: .granted, mode: .access)), "\(door)")
    }

    @Test mutating func aResponseToAChallengeTwoRefreshesOldIsRefused() throws {
        try hold(
            reader(.connected(nonce: Self.nonces[0], secondFactorNonce: Self.nonces[9], standing: true)),
            at: .seconds(0))
        let first = standing.handover(at: .seconds(0))
        try hold(refresh(nonce: Self.nonces[1]), at: .seconds(4))
        try hold(refresh(nonce: Self.nonces[2]), at: .seconds(8))
        // A holder that kept the first nonce past its lifetime: the reader no longer takes it.
        var holder = session(first)
        let door = door(&holder)
        #expect(readerReport?.outcome == .failed(.badSignature))
        #expect(door.outcome == .failed(.protocolViolation), "\(door)")
    }

    @Test mutating func theHolderAnswersOnlyAFreshChallengeAndOtherwiseWaitsForTheNext() throws {
        try hold(
            reader(.connected(nonce: Self.nonces[0], secondFactorNonce: Self.nonces[9], standing: true)),
            at: .seconds(0))
        #expect(standing.handover(at: .seconds(6.4)).nonce == Self.nonces[0])
        let stale = standing.handover(at: .seconds(6.6))
        #expect(stale.nonce == nil)
        // With none fresh the session waits as in version 1 and answers the next refresh.
        var holder = session(stale)
        #expect(
            holder.handle(.connected, replayGuard: &replayGuard).allSatisfy {
                if case .startTimer = $0 { true } else { false }
            })
        let next = refresh(nonce: Self.nonces[1])
        let door = door(&holder, extraToHolder: next)
        #expect(door.outcome == .decided(AccessResult(decision: .granted, mode: .access)), "\(door)")
    }

    @Test mutating func theReaderTimesOutASilentHolderAfterTheMaximumHold() throws {
        try hold(
            reader(.connected(nonce: Self.nonces[0], secondFactorNonce: Self.nonces[9], standing: true)),
            at: .seconds(0))
        var elapsed = Duration.zero
        var n = 1
        while readerReport == nil {
            elapsed += StandingTimings.refresh
            let sent = reader(.timerFired)
            if refreshDue {
                refreshDue = false
                try hold(reader(.freshNonce(Self.nonces[n % 9])), at: .zero + elapsed)
                n += 1
            } else {
                // The reader's error ends the hold at the holder too.
                #expect(throws: ProtocolError.remoteError(.timeout)) { try hold(sent, at: .zero + elapsed) }
            }
        }
        #expect(readerReport?.outcome == .failed(.timeout))
        #expect(
            elapsed >= StandingTimings.maximumHold && elapsed < StandingTimings.maximumHold + StandingTimings.refresh)
    }

    @Test mutating func aVersionOneConnectionNeitherRefreshesNorWaits() throws {
        let sent = reader(.connected(nonce: Self.nonces[0], secondFactorNonce: Self.nonces[9]))
        #expect(!sent.isEmpty && readerTimerArmed == .seconds(5))
        _ = reader(.timerFired)
        #expect(!refreshDue && readerReport?.outcome == .failed(.timeout))
        // And a fresh nonce is no reason to send anything on it.
        #expect(reader(.freshNonce(Self.nonces[1])).isEmpty)
    }

    @Test mutating func aChallengeDuringTheDecisionIsRefusedUnlessTheLinkWasStanding() throws {
        let challenge = reader(.connected(nonce: Self.nonces[0], secondFactorNonce: Self.nonces[9]))
        var other = ReaderSession(configuration: ExchangeHarness.readerConfiguration(), mtu: 23)
        let second = other.handle(.connected(nonce: Self.nonces[1], secondFactorNonce: Self.nonces[9]))
            .flatMap(Self.sent)
        var versionOne = session(nil)
        _ = versionOne.handle(.connected, replayGuard: &replayGuard)
        for fragment in challenge { _ = versionOne.handle(.fragmentReceived(fragment), replayGuard: &replayGuard) }
        var end: ExchangeOutcome?
        for fragment in second {
            for case .finish(let outcome) in versionOne.handle(.fragmentReceived(fragment), replayGuard: &replayGuard) {
                end = outcome
            }
        }
        #expect(end == .failed(.protocolViolation))
    }

    @Test mutating func aForgedOrReplayedStandingChallengeEndsTheHold() throws {
        var forger = ReaderSession(configuration: ExchangeHarness.readerConfiguration(siteKey: Fixtures.spoofKey))
        let forged = forger.handle(.connected(nonce: Self.nonces[0], secondFactorNonce: Self.nonces[9], standing: true))
            .flatMap(Self.sent)
        #expect(throws: ProtocolError.badSignature) { try hold(forged, at: .zero) }
        #expect(standing.newest == nil)
        standing = StandingChallenge(
            readerID: Fixtures.readerID, siteTag: Fixtures.siteTag,
            sitePublicKey: Fixtures.siteKey.publicKey)
        let genuine = reader(.connected(nonce: Self.nonces[0], secondFactorNonce: Self.nonces[9], standing: true))
        try hold(genuine, at: .zero)
        #expect(throws: ProtocolError.replayedChallenge) { try hold(genuine, at: .seconds(1)) }
    }
}
