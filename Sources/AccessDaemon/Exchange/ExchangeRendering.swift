import AccessCore
import AccessJSON
import AccessStore
import ControlSocket

/// How exchanges and credentials look on the socket (docs/protocol.md).
extension Render {
    static func origin(_ origin: ExchangeOrigin) -> String {
        switch origin {
        case .automatic: "automatic"
        case .manual: "manual"
        }
    }

    static func operation(_ operation: ExchangeOperation) -> JSONValue { .string(operationName(operation)) }

    static func operationName(_ operation: ExchangeOperation) -> String {
        switch operation {
        case .access: "access"
        case .enumerateActions: "actions.list"
        case .performAction(let id): "actions.perform \(id)"
        }
    }

    /// How an exchange ended, for `access.completed` and the answer to a manual request.
    static func exchange(
        _ reader: ReaderID, origin: ExchangeOrigin, outcome: ExchangeOutcome,
        timings: ExchangeTimings?
    ) -> ExchangeAnswer {
        var answer = ExchangeAnswer(
            outcome: "", reader: reader.description, origin: Self.origin(origin),
            timings: timings)
        func decided(_ result: AccessResult) {
            answer.decision = result.decision.description
            answer.granted = result.decision.isGranted
            answer.mode = result.mode.description
        }
        switch outcome {
        case .decided(let result):
            answer.outcome = "decided"
            decided(result)
        case .actionsListed(let actions):
            answer.outcome = "actionsListed"
            answer.actions = actions.map { ActionInfo(id: Int($0.id), name: $0.name, type: $0.type.description) }
        case .actionPerformed(let id, let result):
            answer.outcome = "actionPerformed"
            answer.action = Int(id)
            decided(result)
        case .failed(let failure):
            answer.outcome = "failed"
            answer.error = failure.connectionError.rawValue
        }
        return answer
    }

    static func credential(_ stored: StoredCredential, items: [StoredItem], pinAttempts: Int) -> CredentialInfo {
        let c = stored.credential
        return CredentialInfo(
            id: c.id.description, site: c.siteTag.description, siteName: stored.siteName, siteURL: stored.siteURL,
            cardholderName: c.cardholderName, deviceName: stored.deviceName,
            state: stored.keyProblem != nil && c.state == .active ? "keyUnavailable" : c.state.rawValue,
            secondFactor: SecondFactorInfo(
                required: c.secondFactorEnabled, pinSet: c.sealedSecondFactor != nil,
                lockedOut: stored.failedPinAttempts >= pinAttempts,
                attemptsLeft: max(0, pinAttempts - stored.failedPinAttempts)),
            registeredAt: stored.registeredAt, lastSyncAt: stored.lastSyncAt,
            itemCount: items.filter { $0.credentialID == c.id }.count, priority: stored.priority,
            fingerprint: c.signingKey.map { KeyFingerprint.of($0.publicKey) },
            keyProblem: stored.keyProblem?.description)
    }
}
