import AccessCore
import AccessStore
import ControlSocket

/// How exchanges and credentials look on the socket (docs/protocol.md).
extension Render {
    static func origin(_ origin: ExchangeOrigin) -> JSONValue {
        switch origin {
        case .automatic: "automatic"
        case .manual: "manual"
        }
    }

    static func operation(_ operation: ExchangeOperation) -> JSONValue {
        switch operation {
        case .access: "access"
        case .enumerateActions: "actions.list"
        case let .performAction(id): .string("actions.perform \(id)")
        }
    }

    static func result(_ result: AccessResult) -> [String: JSONValue] {
        ["decision": .string(result.decision.description), "granted": .bool(result.decision.isGranted),
         "mode": .string(result.mode.description)]
    }

    static func outcome(_ outcome: ExchangeOutcome) -> [String: JSONValue] {
        switch outcome {
        case let .decided(result):
            var data = Self.result(result)
            data["outcome"] = "decided"
            return data
        case let .actionsListed(actions):
            return ["outcome": "actionsListed",
                    "actions": .array(actions.map { ["id": .int(Int64($0.id)), "name": .string($0.name),
                                                     "type": .string($0.type.description)] })]
        case let .actionPerformed(id, result):
            var data = Self.result(result)
            data["outcome"] = "actionPerformed"
            data["action"] = .int(Int64(id))
            return data
        case let .failed(failure):
            return ["outcome": "failed", "error": .string(failure.connectionError.rawValue)]
        }
    }

    static func credential(_ stored: StoredCredential, items: [StoredItem], pinAttempts: Int) -> JSONValue {
        let c = stored.credential
        return [
            "id": .string(c.id.description),
            "site": .string(c.siteTag.description),
            "siteName": .string(stored.siteName),
            "siteURL": .string(stored.siteURL),
            "cardholderName": .string(c.cardholderName),
            "deviceName": .string(stored.deviceName),
            "state": .string(c.state.rawValue),
            "secondFactor": [
                "required": .bool(c.secondFactorEnabled),
                "pinSet": .bool(c.sealedSecondFactor != nil),
                "lockedOut": .bool(stored.failedPinAttempts >= pinAttempts),
                "attemptsLeft": .int(Int64(max(0, pinAttempts - stored.failedPinAttempts))),
            ],
            "registeredAt": .double(stored.registeredAt),
            "lastSyncAt": stored.lastSyncAt.map { .double($0) } ?? .null,
            "itemCount": .int(Int64(items.filter { $0.credentialID == c.id }.count)),
        ]
    }
}
