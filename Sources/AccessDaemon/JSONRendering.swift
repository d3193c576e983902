import AccessCore
import AccessStore
import ControlSocket

/// How core values look on the socket (docs/protocol.md). One place, so the socket and
/// `accessctl --json` agree.
enum Render {
    static func reader(_ r: ReaderAttributes) -> JSONValue {
        var object: [String: JSONValue] = [
            "id": .string(r.id.description),
            "kind": .string(r.kind.description),
            "site": .string(r.siteTag.description),
            "address": .string(r.address.description),
            "rssi": .int(Int64(r.rssi)),
            "txPower": .int(Int64(r.txPower)),
            "measuredPathLoss": .double((r.measuredPathLoss * 10).rounded() / 10),
            "distance": .string(r.distance.description),
            "autoConnectPathLoss": .int(Int64(r.autoConnectPathLoss)),
            "manualConnectPathLoss": .int(Int64(r.manualConnectPathLoss)),
            "isBleAutoConnectEnabled": .bool(r.isBleAutoConnectEnabled),
            "isBleManualConnectEnabled": .bool(r.isBleManualConnectEnabled),
            "isSecondFactorRequired": .bool(r.isSecondFactorRequired),
            "isBleActionsEnabled": .bool(r.isBleActionsEnabled),
            "isInAutoConnectRange": .bool(r.isInAutoConnectRange),
        ]
        object["name"] = r.name.map { .string($0) } ?? .null
        return .object(object)
    }

    static func sdkState(_ state: SdkState) -> JSONValue {
        ["isScanning": .bool(state.isScanning),
         "states": .array(state.states.map { .string($0.rawValue) }),
         "featureErrors": .array(state.featureSyncErrors.map { .string($0) })]
    }
}

extension Render {
    /// An item without its secrets: the Aperio key and identifier never leave the store.
    static func item(_ item: StoredItem) -> JSONValue {
        var object: [String: JSONValue] = [
            "id": .string(item.id), "credential": .string(item.credentialID.description), "type": .string(item.type),
            "name": .string(item.name), "state": .string(item.state.rawValue),
        ]
        if let tag = item.siteTag { object["site"] = .string(tag.description) }
        if let data = item.data, let parsed = try? JSONValue.parse(data) { object["data"] = parsed }
        return .object(object)
    }
}
