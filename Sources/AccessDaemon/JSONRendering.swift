import AccessCore
import AccessJSON
import AccessStore
import ControlSocket

/// How core values look on the socket (docs/protocol.md). One place, so the socket and
/// `accessctl --json` agree.
enum Render {
    static func reader(_ r: ReaderAttributes) -> ReaderInfo {
        ReaderInfo(
            id: r.id.description, name: r.name, kind: r.kind.description, site: r.siteTag.description,
            address: r.address.description, rssi: Int(r.rssi), txPower: Int(r.txPower),
            measuredPathLoss: (r.measuredPathLoss * 10).rounded() / 10, distance: r.distance.description,
            autoConnectPathLoss: Int(r.autoConnectPathLoss), manualConnectPathLoss: Int(r.manualConnectPathLoss),
            isBleAutoConnectEnabled: r.isBleAutoConnectEnabled, isBleManualConnectEnabled: r.isBleManualConnectEnabled,
            isSecondFactorRequired: r.isSecondFactorRequired, isBleActionsEnabled: r.isBleActionsEnabled,
            isInAutoConnectRange: r.isInAutoConnectRange,
            heardSecondsAgo: max(
                0, Double((Clocks.monotonic().nanoseconds - r.lastSeen.nanoseconds) / 100_000_000) / 10),
            scope: ReaderScopeCalls.effective(r.scope))
    }

    /// A contract value as an event's data. Our values hold only finite numbers, so
    /// encoding cannot fail; `null` marks it if it ever did.
    static func json<T: Encodable>(_ value: T) -> JSONValue {
        (try? JSONValue(encoding: value)) ?? .null
    }

    static func sdkState(_ state: SdkState) -> SdkStateEvent {
        SdkStateEvent(
            isScanning: state.isScanning, states: state.states.map(\.rawValue),
            featureErrors: state.featureSyncErrors.map { $0 })
    }
}

extension Render {
    /// An item without its secrets: the Aperio key and identifier never leave the store.
    static func item(_ item: StoredItem) -> ItemInfo {
        ItemInfo(
            id: item.id, credential: item.credentialID.description, type: item.type, name: item.name,
            state: item.state.rawValue, site: item.siteTag?.description,
            data: item.data.flatMap { try? JSONValue.parse($0) }, validFrom: item.validFrom,
            validUntil: item.validUntil,
            valid: item.isValid(at: Clocks.wall()))
    }
}
