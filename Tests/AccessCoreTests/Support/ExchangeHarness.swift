import Crypto

@testable import AccessCore

/// Runs both sides of the reader protocol against each other in memory, the way the BlueZ
/// shell and readersim will over GATT: fragments cross in order, timers fire only when the
/// test says so, and a tamper hook may change any fragment in flight.
struct ExchangeHarness {
    enum Direction { case toReader, toCredential }

    var credential: CredentialSession
    var reader: ReaderSession
    var replayGuard = ChallengeReplayGuard()
    var credentialOutcome: ExchangeOutcome?
    var readerReport: ReaderSession.Report?
    var secondFactorRequested = false
    var credentialTimerArmed = false
    var readerTimerArmed = false
    var refreshRequested = false
    /// Called for every fragment; return nil to drop it.
    var tamper: (Direction, [UInt8]) -> [UInt8]? = { $1 }
    /// Answer to a second-factor request: a key, or a failure.
    var secondFactor: CredentialSession.Input? = nil
    var transcript: [(Direction, [UInt8])] = []

    init(credential: CredentialSession, reader: ReaderSession) {
        self.credential = credential
        self.reader = reader
    }

    static func standard(
        operation: ExchangeOperation = .access,
        presentation: CredentialSession.Presentation = .mobile(Fixtures.credentialID, Fixtures.credentialKey),
        readerConfiguration: ReaderSession.Configuration = readerConfiguration(),
        sitePublicKey: P256.Signing.PublicKey = Fixtures.siteKey.publicKey,
        mtu: Int = 23, certificates: CertificateTrust? = nil
    ) -> ExchangeHarness {
        ExchangeHarness(
            credential: CredentialSession(
                readerID: Fixtures.readerID, siteTag: Fixtures.siteTag,
                sitePublicKey: sitePublicKey, presentation: presentation,
                operation: operation, mtu: mtu, certificates: certificates),
            reader: ReaderSession(configuration: readerConfiguration, mtu: mtu))
    }

    static func readerConfiguration(
        kind: ReaderKind = .gallagherStyle, siteKey: P256.Signing.PrivateKey = Fixtures.siteKey,
        policy: ReaderSession.DecisionPolicy = .fromSite, secondFactorRequired: Bool = false,
        state: CredentialState = .active, includeCredential: Bool = true,
        actions: [ReaderAction] = [], actionOutcomes: [Int8: AccessDecision] = [:]
    ) -> ReaderSession.Configuration {
        ReaderSession.Configuration(
            readerID: Fixtures.readerID, siteTag: Fixtures.siteTag, kind: kind, siteKey: siteKey, policy: policy,
            secondFactorRequired: secondFactorRequired, actions: actions, actionOutcomes: actionOutcomes,
            credentials: includeCredential
                ? [
                    .init(
                        id: Fixtures.credentialID, publicKey: Fixtures.credentialKey.publicKey,
                        secondFactorPublicKey: Fixtures.secondFactorKey.publicKey, state: state)
                ]
                : [],
            aperioCredentials: [.init(secret: Fixtures.aperio, state: state)])
    }

    static let nonce: [UInt8] = Array(0x10...0x1F)
    static let secondNonce: [UInt8] = Array(0x20...0x2F)

    /// Connects and runs until both sides are quiet.
    /// `certified`: the holder asked for version 3 (§1.1).
    mutating func run(nonce: [UInt8] = nonce, secondNonce: [UInt8] = secondNonce, certified: Bool = false) {
        var toReader: [[UInt8]] = []
        var toCredential: [[UInt8]] = []
        apply(credential.handle(.connected, replayGuard: &replayGuard), outbox: &toReader)
        apply(
            reader.handle(.connected(nonce: nonce, secondFactorNonce: secondNonce, certified: certified)),
            outbox: &toCredential)
        pump(&toReader, &toCredential)
    }

    mutating func pump(_ toReader: inout [[UInt8]], _ toCredential: inout [[UInt8]]) {
        while !toReader.isEmpty || !toCredential.isEmpty {
            if !toCredential.isEmpty {
                let fragment = toCredential.removeFirst()
                transcript.append((.toCredential, fragment))
                guard let delivered = tamper(.toCredential, fragment) else { continue }
                apply(credential.handle(.fragmentReceived(delivered), replayGuard: &replayGuard), outbox: &toReader)
                if secondFactorRequested, let answer = secondFactor {
                    secondFactor = nil
                    apply(credential.handle(answer, replayGuard: &replayGuard), outbox: &toReader)
                }
            } else {
                let fragment = toReader.removeFirst()
                transcript.append((.toReader, fragment))
                guard let delivered = tamper(.toReader, fragment) else { continue }
                apply(reader.handle(.fragmentReceived(delivered)), outbox: &toCredential)
            }
        }
    }

    mutating func fireCredentialTimer() {
        var toReader: [[UInt8]] = []
        var toCredential: [[UInt8]] = []
        apply(credential.handle(.timerFired, replayGuard: &replayGuard), outbox: &toReader)
        pump(&toReader, &toCredential)
    }

    private mutating func apply(_ actions: [CredentialSession.Action], outbox: inout [[UInt8]]) {
        for action in actions {
            switch action {
            case .send(let fragments): outbox += fragments
            case .startTimer: credentialTimerArmed = true
            case .cancelTimer: credentialTimerArmed = false
            case .requestSecondFactor: secondFactorRequested = true
            case .finish(let outcome): credentialOutcome = outcome
            }
        }
    }

    private mutating func apply(_ actions: [ReaderSession.Action], outbox: inout [[UInt8]]) {
        for action in actions {
            switch action {
            case .send(let fragments): outbox += fragments
            case .startTimer: readerTimerArmed = true
            case .cancelTimer: readerTimerArmed = false
            case .refreshChallenge: refreshRequested = true
            case .finish(let report): readerReport = report
            }
        }
    }
}
