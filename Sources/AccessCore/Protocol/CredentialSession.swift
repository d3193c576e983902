import Crypto

/// The credential side of one exchange over one connection: accessd's half of the protocol.
///
/// Fed with the fragments the reader notifies; returns the fragments to write, timers, and
/// at the end exactly one `finish`. Nothing is trusted before it verifies: the challenge
/// and every reader message must carry the site key's signature over this session's nonce.
public struct CredentialSession: Sendable {
    /// What is presented to the reader.
    public enum Presentation: Sendable {
        case mobile(CredentialID, P256.Signing.PrivateKey)
        case aperio(AperioSecret)
    }

    public enum Input: Sendable {
        /// The control point is subscribed: the reader will now send its challenge.
        case connected
        case fragmentReceived([UInt8])
        case mtuChanged(Int)
        /// The unsealed second-factor key, after the PIN was given.
        case secondFactorKey(P256.Signing.PrivateKey)
        /// No second factor can be given (none set, locked out, nobody answered).
        case secondFactorUnavailable(ExchangeFailure)
        case timerFired
        case disconnected
    }

    public enum Action: Sendable {
        case send([[UInt8]])
        case startTimer(after: Duration)
        case cancelTimer
        /// Ask the person for the PIN (the shell emits `secondFactor.required`).
        case requestSecondFactor
        case finish(ExchangeOutcome)
    }

    private enum State: Sendable {
        case awaitingChallenge
        case awaitingDecision(nonce: [UInt8])
        case awaitingSecondFactorKey(nonce: [UInt8], secondNonce: [UInt8])
        case awaitingSecondFactorDecision(nonce: [UInt8])
        case finished
    }

    public let readerID: ReaderID
    public let siteTag: SiteTag
    public let operation: ExchangeOperation
    public private(set) var mtu: Int
    private let sitePublicKey: P256.Signing.PublicKey
    private let certificates: CertificateTrust?
    /// The key that signed the challenge being answered, which signs every later reader
    /// message: the site key, or in version 3 the certified controller key (§1.1).
    private var readerKey: P256.Signing.PublicKey
    private let presentation: Presentation
    private let timeouts: ProtocolTimeouts
    private var state: State = .awaitingChallenge
    private var reassembler = FrameReassembler()
    /// Over a held link with a standing challenge (version 2): the reader may send a refresh
    /// that crosses the response, and the challenge to answer may already be here.
    private var overStandingLink = false
    private var standingNonce: [UInt8]?

    public init(
        readerID: ReaderID, siteTag: SiteTag, sitePublicKey: P256.Signing.PublicKey, presentation: Presentation,
        operation: ExchangeOperation, mtu: Int = ReaderGATT.minimumMTU, timeouts: ProtocolTimeouts = ProtocolTimeouts(),
        certificates: CertificateTrust? = nil
    ) {
        self.readerID = readerID
        self.siteTag = siteTag
        self.sitePublicKey = sitePublicKey
        self.certificates = certificates
        self.readerKey = sitePublicKey
        self.presentation = presentation
        self.operation = operation
        self.mtu = mtu
        self.timeouts = timeouts
    }

    /// Before `connected`: the exchange runs over a held link whose challenges stood
    /// (version 2, `StandingChallenge`). The newest, if fresh, was verified and admitted to the
    /// replay guard there, and is answered as soon as the session hears `connected`.
    public mutating func takeOver(_ standing: StandingChallenge.Handover) {
        guard case .awaitingChallenge = state else { return }
        overStandingLink = true
        standingNonce = standing.nonce
        if let signer = standing.signer { readerKey = signer }
        reassembler = standing.reassembler
    }

    public var isFinished: Bool { if case .finished = state { true } else { false } }
    /// Why the holder gave the exchange up, in the protocol's words (a certificate refused, and
    /// which check; a signature that does not verify; the reader's error), for the journal: the
    /// outcome names only the class.
    public private(set) var abandonedWith: ProtocolError?

    public mutating func handle(_ input: Input, replayGuard: inout ChallengeReplayGuard) -> [Action] {
        if case .finished = state { return [] }
        switch input {
        case .connected:
            guard case .awaitingChallenge = state else { return [] }
            if let nonce = standingNonce {
                standingNonce = nil
                state = .awaitingDecision(nonce: nonce)
                return [send(response(to: nonce)), .startTimer(after: timeouts.step)]
            }
            return [.startTimer(after: timeouts.step)]
        case .mtuChanged(let value):
            mtu = max(value, ReaderGATT.minimumMTU)
            return []
        case .timerFired:
            return abandon(.timeout)
        case .disconnected:
            state = .finished
            return [.cancelTimer, .finish(.failed(.remoteClose))]
        case .fragmentReceived(let fragment):
            do {
                guard let bytes = try reassembler.feed(fragment) else { return [] }
                return try receive(ProtocolMessage(decoding: bytes), replayGuard: &replayGuard)
            } catch {
                return abandon(error)
            }
        case .secondFactorKey(let key):
            guard case .awaitingSecondFactorKey(let nonce, let secondNonce) = state,
                case .mobile(let credentialID, _) = presentation
            else { return [] }
            let signature = ProtocolCrypto.sign(
                SignedContent.secondFactorResponse(
                    secondNonce: secondNonce, readerID: readerID,
                    credentialID: credentialID), with: key)
            state = .awaitingSecondFactorDecision(nonce: nonce)
            return [.cancelTimer, send(.secondFactorResponse(signature: signature)), .startTimer(after: timeouts.step)]
        case .secondFactorUnavailable(let failure):
            guard case .awaitingSecondFactorKey = state else { return [] }
            state = .finished
            return [.cancelTimer, send(.error(.secondFactorFailed)), .finish(.failed(failure))]
        }
    }

    private mutating func receive(_ message: ProtocolMessage, replayGuard: inout ChallengeReplayGuard)
        throws(ProtocolError) -> [Action]
    {
        if case .error(let code) = message { throw .remoteError(code) }
        switch (state, message) {
        case (.awaitingChallenge, .challenge(let challenge)):
            readerKey = try challenge.verify(
                readerID: readerID, siteTag: siteTag, sitePublicKey: sitePublicKey, certificates: certificates,
                replayGuard: &replayGuard)
            state = .awaitingDecision(nonce: challenge.nonce)
            return [.cancelTimer, send(response(to: challenge.nonce)), .startTimer(after: timeouts.step)]

        case (.awaitingDecision, .challenge) where overStandingLink:
            // A refresh the reader sent before our response reached it: the reader answers
            // the response all the same (it accepts the challenge before the newest).
            return []

        case (.awaitingDecision(let nonce), .decision(let decision)),
            (.awaitingSecondFactorDecision(let nonce), .decision(let decision)):
            try verify(decision, nonce: nonce)
            state = .finished
            let outcome: ExchangeOutcome
            if case .performAction(let id) = operation {
                outcome = .actionPerformed(actionID: id, result: decision.result)
            } else {
                outcome = .decided(decision.result)
            }
            return [.cancelTimer, .finish(outcome)]

        case (.awaitingDecision(let nonce), .secondFactorChallenge(let challenge)):
            guard case .mobile(let credentialID, _) = presentation else { throw .unexpectedMessage(message.typeCode) }
            let content = SignedContent.secondFactorChallenge(
                nonce: nonce, secondNonce: challenge.nonce,
                readerID: readerID, credentialID: credentialID)
            guard ProtocolCrypto.verify(challenge.signature, over: content, with: readerKey) else {
                throw .badSignature
            }
            state = .awaitingSecondFactorKey(nonce: nonce, secondNonce: challenge.nonce)
            return [.cancelTimer, .requestSecondFactor, .startTimer(after: timeouts.secondFactor)]

        case (.awaitingDecision(let nonce), .actionList(let list)):
            guard operation == .enumerateActions, case .mobile(let credentialID, _) = presentation else {
                throw .unexpectedMessage(message.typeCode)
            }
            let content = SignedContent.actionList(
                nonce: nonce, readerID: readerID, credentialID: credentialID,
                body: list.actionsBody)
            guard ProtocolCrypto.verify(list.signature, over: content, with: readerKey) else { throw .badSignature }
            state = .finished
            return [.cancelTimer, .finish(.actionsListed(list.actions))]

        default:
            throw .unexpectedMessage(message.typeCode)
        }
    }

    private func verify(_ decision: ProtocolMessage.Decision, nonce: [UInt8]) throws(ProtocolError) {
        let expectedAction: Int8? = if case .performAction(let id) = operation { id } else { nil }
        guard operation != .enumerateActions, decision.actionID == expectedAction else {
            throw .invalidField("decision.actionID")
        }
        let content = SignedContent.decision(
            nonce: nonce, readerID: readerID, credential: presentedIdentifier,
            result: decision.result, actionID: decision.actionID)
        guard ProtocolCrypto.verify(decision.signature, over: content, with: readerKey) else { throw .badSignature }
    }

    private var presentedIdentifier: [UInt8] {
        switch presentation {
        case .mobile(let id, _): id.bytes
        case .aperio(let secret): secret.identifier
        }
    }

    private func response(to nonce: [UInt8]) -> ProtocolMessage {
        switch presentation {
        case .mobile(let credentialID, let key):
            let content = SignedContent.response(
                nonce: nonce, readerID: readerID, credentialID: credentialID,
                operation: operation)
            return .response(
                .init(
                    credentialID: credentialID, operation: operation,
                    signature: ProtocolCrypto.sign(content, with: key)))
        case .aperio(let secret):
            let content = SignedContent.aperio(nonce: nonce, readerID: readerID, aperioID: secret.identifier)
            return .aperioResponse(
                .init(aperioID: secret.identifier, mac: ProtocolCrypto.mac(content, key: secret.key)))
        }
    }

    private func send(_ message: ProtocolMessage) -> Action {
        .send(Fragmentation.fragments(of: message.encoded, mtu: mtu))
    }

    private mutating func abandon(_ error: ProtocolError) -> [Action] {
        state = .finished
        abandonedWith = error
        var actions: [Action] = [.cancelTimer]
        // Tell the reader why, unless it told us (answering an error with an error loops).
        if case .remoteError = error {} else { actions.append(send(.error(error.wireCode))) }
        actions.append(.finish(.failed(Self.failure(for: error))))
        return actions
    }

    static func failure(for error: ProtocolError) -> ExchangeFailure {
        switch error {
        case .badSignature, .wrongReader, .wrongSite, .replayedChallenge, .certificate: .badReaderSignature
        // A reader with neither the site key nor a certificate naming it (§1.1): it cannot
        // prove it is the site's, whatever the reason.
        case .remoteError(.unsupportedVersion): .badReaderSignature
        case .timeout: .timedOut
        case .remoteError(.unknownCredential), .remoteError(.credentialRevoked): .invalidatedCredential
        case .remoteError(.busy): .readerBusy
        case .remoteError(.unsupportedOperation): .operationNotOffered
        case .remoteError(.timeout): .timedOut
        default: .protocolViolation
        }
    }
}
