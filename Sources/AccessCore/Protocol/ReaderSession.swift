import Crypto

/// The reader side of one exchange: readersim's half of the protocol, and the reference a
/// reader implementer can read next to docs/reader-protocol.md.
public struct ReaderSession: Sendable {
    /// How the reader decides once a credential has proven itself.
    public enum DecisionPolicy: Hashable, Sendable {
        case grant
        case deny(AccessDecision)
        /// Grant active credentials, deny suspended ones (`deniedAuth`), refuse revoked
        /// and unknown ones with an error.
        case fromSite
    }

    public enum Input: Sendable {
        /// A central subscribed to the control point. Nonces come from the shell's CSPRNG.
        /// `standing`: it wrote the standing version to the hold point first (version 2,
        /// §6 "Standing challenges"), so the challenge stands, refreshed, until it answers.
        /// `certified`: it wrote version 3 there (§1.1): the reader signs with its controller
        /// key and sends its certificate, if it has one.
        case connected(nonce: [UInt8], secondFactorNonce: [UInt8], standing: Bool = false, certified: Bool = false)
        /// A fresh nonce for a refreshed standing challenge, after `refreshChallenge`.
        case freshNonce([UInt8])
        case fragmentReceived([UInt8])
        case mtuChanged(Int)
        case timerFired
        case disconnected
    }

    public enum Action: Sendable {
        case send([[UInt8]])
        case startTimer(after: Duration)
        case cancelTimer
        /// A standing challenge is due for refresh: answer with `freshNonce`.
        case refreshChallenge
        case finish(Report)
    }

    private enum State: Sendable {
        case idle
        /// `nonces`: the challenges a response may answer, newest last (one in version 1;
        /// the newest two on a standing link). `refreshes`: how often it was refreshed.
        case awaitingResponse(nonces: [[UInt8]], secondNonce: [UInt8], standing: Bool, refreshes: Int)
        case awaitingSecondFactor(
            nonce: [UInt8], secondNonce: [UInt8], record: CredentialRecord,
            operation: ExchangeOperation)
        case finished
    }

    public let configuration: Configuration
    public private(set) var mtu: Int
    private var state: State = .idle
    private var reassembler = FrameReassembler()
    private var presented: String?
    private var operation: ExchangeOperation?
    /// The controller this exchange speaks as (version 3), chosen at `connected`.
    private var certifiedAs: ControllerIdentity?
    /// The key every message of this exchange is signed with, chosen at `connected`: the
    /// controller's in version 3, else the site's (which a site allowing only version 3 does
    /// not give its readers).
    private var signer: P256.Signing.PrivateKey?

    /// Whether the challenge stands, refreshed, until the holder answers (version 2).
    public var isStanding: Bool {
        if case .awaitingResponse(_, _, true, _) = state { true } else { false }
    }

    public init(configuration: Configuration, mtu: Int = ReaderGATT.minimumMTU) {
        self.configuration = configuration
        self.mtu = mtu
    }

    public mutating func handle(_ input: Input) -> [Action] {
        switch (state, input) {
        case (.finished, _):
            return []
        case (_, .mtuChanged(let value)):
            mtu = max(value, ReaderGATT.minimumMTU)
            return []
        case (.idle, .connected(let nonce, let secondNonce, let standing, let certified)):
            guard nonce.count == ProtocolMessage.nonceLength, secondNonce.count == ProtocolMessage.nonceLength else {
                return fail(.invalidField("nonce"))
            }
            certifiedAs = certified ? configuration.controller : nil
            // A reader of a site that allows only version 3 has no site key: it cannot speak
            // versions 1-2, nor version 3 without a certificate naming it (§1.1).
            guard let key = certifiedAs?.key ?? configuration.siteKey else { return refuse(.unsupportedVersion) }
            signer = key
            state = .awaitingResponse(nonces: [nonce], secondNonce: secondNonce, standing: standing, refreshes: 0)
            return [
                send(challenge(nonce)),
                .startTimer(after: standing ? StandingTimings.refresh : configuration.timeouts.step),
            ]
        case (_, .connected):
            return []
        case (.awaitingResponse(let nonces, let secondNonce, true, let refreshes), .timerFired):
            // Timers fire every `refresh`: the holder has been silent this long.
            if StandingTimings.refresh * (refreshes + 1) >= StandingTimings.maximumHold { return fail(.timeout) }
            state = .awaitingResponse(
                nonces: nonces, secondNonce: secondNonce, standing: true, refreshes: refreshes + 1)
            return [.refreshChallenge]
        case (.awaitingResponse(let nonces, let secondNonce, true, let refreshes), .freshNonce(let nonce)):
            guard nonce.count == ProtocolMessage.nonceLength else { return fail(.invalidField("nonce")) }
            // The challenge before stays answerable: a response may be on its way.
            state = .awaitingResponse(
                nonces: [nonces.last ?? nonce, nonce], secondNonce: secondNonce, standing: true,
                refreshes: refreshes)
            return [send(challenge(nonce)), .startTimer(after: StandingTimings.refresh)]
        case (_, .freshNonce):
            return []
        case (_, .timerFired):
            return fail(.timeout)
        case (_, .disconnected):
            state = .finished
            return [
                .cancelTimer,
                .finish(
                    Report(
                        credential: presented, operation: operation,
                        outcome: .disconnected)),
            ]
        case (_, .fragmentReceived(let fragment)):
            do {
                guard let bytes = try reassembler.feed(fragment) else { return [] }
                return try receive(ProtocolMessage(decoding: bytes))
            } catch {
                return fail(error)
            }
        }
    }

    private mutating func receive(_ message: ProtocolMessage) throws(ProtocolError) -> [Action] {
        if case .error(let code) = message { throw .remoteError(code) }
        switch (state, message) {
        case (.awaitingResponse(let nonces, let secondNonce, _, _), .response(let response)):
            guard configuration.kind == .gallagherStyle else { throw .unexpectedMessage(message.typeCode) }
            presented = response.credentialID.description
            operation = response.operation
            guard let record = configuration.credentials[response.credentialID] else {
                return refuse(.unknownCredential)
            }
            // The newest challenge first; the one before only on a standing link.
            let answered = nonces.reversed().first { nonce in
                let content = SignedContent.response(
                    nonce: nonce, readerID: configuration.readerID,
                    credentialID: response.credentialID, operation: response.operation)
                return ProtocolCrypto.verify(response.signature, over: content, with: record.publicKey)
            }
            guard let nonce = answered else { throw .badSignature }
            return try respond(to: response.operation, record: record, nonce: nonce, secondNonce: secondNonce)

        case (.awaitingResponse(let nonces, _, _, _), .aperioResponse(let response)):
            guard configuration.kind == .aperioStyle else { throw .unexpectedMessage(message.typeCode) }
            presented = response.aperioID.hexString
            operation = .access
            guard let record = configuration.aperioCredentials[response.aperioID] else {
                return refuse(.unknownCredential)
            }
            let answered = nonces.reversed().first { nonce in
                let content = SignedContent.aperio(
                    nonce: nonce, readerID: configuration.readerID,
                    aperioID: response.aperioID)
                return ProtocolCrypto.verifyMAC(response.mac, over: content, key: record.secret.key)
            }
            guard let nonce = answered else { throw .badSignature }
            if record.state == .revoked { return refuse(.credentialRevoked) }
            let decision = decide(state: record.state)
            return decided(decision, actionID: nil, nonce: nonce, credential: response.aperioID)

        case (
            .awaitingSecondFactor(let nonce, let secondNonce, let record, let operation),
            .secondFactorResponse(let signature)
        ):
            let content = SignedContent.secondFactorResponse(
                secondNonce: secondNonce, readerID: configuration.readerID,
                credentialID: record.id)
            guard let key = record.secondFactorPublicKey,
                ProtocolCrypto.verify(signature, over: content, with: key)
            else {
                return refuse(.secondFactorFailed)
            }
            return try finishOperation(operation, record: record, nonce: nonce)

        default:
            throw .unexpectedMessage(message.typeCode)
        }
    }

    private mutating func respond(
        to operation: ExchangeOperation, record: CredentialRecord, nonce: [UInt8],
        secondNonce: [UInt8]
    ) throws(ProtocolError) -> [Action] {
        if record.state == .revoked { return refuse(.credentialRevoked) }
        // A second factor is asked for only where the reader would otherwise grant.
        if operation == .access, configuration.secondFactorRequired, decide(state: record.state).decision.isGranted {
            guard record.secondFactorPublicKey != nil else {
                // The credential cannot give a second factor: the reader denies.
                return decided(
                    AccessResult(decision: .deniedAuth, mode: configuration.mode), actionID: nil,
                    nonce: nonce, credential: record.id.bytes)
            }
            let content = SignedContent.secondFactorChallenge(
                nonce: nonce, secondNonce: secondNonce,
                readerID: configuration.readerID, credentialID: record.id)
            state = .awaitingSecondFactor(nonce: nonce, secondNonce: secondNonce, record: record, operation: operation)
            return [
                .cancelTimer,
                send(
                    .secondFactorChallenge(
                        .init(
                            nonce: secondNonce,
                            signature: sign(content)))),
                .startTimer(after: configuration.timeouts.secondFactor),
            ]
        }
        return try finishOperation(operation, record: record, nonce: nonce)
    }

    private mutating func finishOperation(
        _ operation: ExchangeOperation, record: CredentialRecord,
        nonce: [UInt8]
    ) throws(ProtocolError) -> [Action] {
        switch operation {
        case .access:
            return decided(decide(state: record.state), actionID: nil, nonce: nonce, credential: record.id.bytes)
        case .enumerateActions:
            guard !configuration.actions.isEmpty else { return refuse(.unsupportedOperation) }
            let list = ProtocolMessage.ActionList(actions: configuration.actions, signature: [])
            let content = SignedContent.actionList(
                nonce: nonce, readerID: configuration.readerID,
                credentialID: record.id, body: list.actionsBody)
            let signed = ProtocolMessage.ActionList(
                actions: configuration.actions,
                signature: sign(content))
            state = .finished
            return [
                .cancelTimer, send(.actionList(signed)),
                .finish(Report(credential: presented, operation: operation, outcome: .actionsListed(signed.actions))),
            ]
        case .performAction(let id):
            guard configuration.actions.contains(where: { $0.id == id }) else { return refuse(.unsupportedOperation) }
            var result = decide(state: record.state)
            if result.decision.isGranted, let outcome = configuration.actionOutcomes[id] {
                result.decision = outcome
            }
            return decided(result, actionID: id, nonce: nonce, credential: record.id.bytes)
        }
    }

    private func decide(state credentialState: CredentialState) -> AccessResult {
        let decision: AccessDecision
        switch configuration.policy {
        // A suspended credential is never granted, whatever the reader was told to do
        // (§6, "Decision policy"); a denial is a denial.
        case .grant: decision = credentialState == .active ? .granted : .deniedAuth
        case .deny(let code): decision = code
        case .fromSite: decision = credentialState == .active ? .granted : .deniedAuth
        }
        return AccessResult(decision: decision, mode: configuration.mode)
    }

    private mutating func decided(
        _ result: AccessResult, actionID: Int8?, nonce: [UInt8],
        credential: [UInt8]
    ) -> [Action] {
        let content = SignedContent.decision(
            nonce: nonce, readerID: configuration.readerID, credential: credential,
            result: result, actionID: actionID)
        let message = ProtocolMessage.decision(
            .init(
                result: result, actionID: actionID,
                signature: sign(content)))
        state = .finished
        let outcome: Report.Outcome = actionID.map { .actionPerformed($0, result) } ?? .decided(result)
        return [
            .cancelTimer, send(message), .finish(Report(credential: presented, operation: operation, outcome: outcome)),
        ]
    }

    private mutating func refuse(_ code: ProtocolErrorCode) -> [Action] {
        state = .finished
        return [
            .cancelTimer, send(.error(code)),
            .finish(Report(credential: presented, operation: operation, outcome: .refused(code))),
        ]
    }

    private mutating func fail(_ error: ProtocolError) -> [Action] {
        state = .finished
        var actions: [Action] = [.cancelTimer]
        if case .remoteError = error {} else { actions.append(send(.error(error.wireCode))) }
        actions.append(.finish(Report(credential: presented, operation: operation, outcome: .failed(error))))
        return actions
    }

    private func send(_ message: ProtocolMessage) -> Action {
        .send(Fragmentation.fragments(of: message.encoded, mtu: mtu))
    }

    private func sign(_ content: [UInt8]) -> [UInt8] {
        // Every message is signed after `connected`, which refuses when it has no key.
        guard let signer else { preconditionFailure("a reader session signed before it was connected") }
        return ProtocolCrypto.sign(content, with: signer)
    }

    private func challenge(_ nonce: [UInt8]) -> ProtocolMessage {
        let c = configuration
        let signature = sign(
            SignedContent.challenge(
                readerID: c.readerID, siteTag: c.siteTag, nonce: nonce, certified: certifiedAs != nil))
        return .challenge(
            .init(
                readerID: c.readerID, siteTag: c.siteTag, nonce: nonce, certificate: certifiedAs?.certificate,
                signature: signature))
    }
}
