import ControlSocket

/// One value of every event kind's data, twice: with every optional field set (`full`) and
/// with none (`minimal`). A switch over `EventKind`, so a new kind fails to compile here
/// until it has its samples, and the contract test then holds it against docs/protocol.md.
enum EventSamples {
    static let reader = ReaderInfo(
        id: "00002A01", name: "Front door", kind: "gallagher", site: "5117E001", address: "00:BB:01:00:00:00",
        rssi: -69,
        txPower: -59, measuredPathLoss: 10, distance: "near", autoConnectPathLoss: 20, manualConnectPathLoss: 40,
        isBleAutoConnectEnabled: true, isBleManualConnectEnabled: true, isSecondFactorRequired: false,
        isBleActionsEnabled: false, isInAutoConnectRange: true, heardSecondsAgo: 0.4)
    static let credential = "4b1f0d3e-2a01-4c6e-9d8b-0123456789ab"

    static func full(_ kind: EventKind) -> any ControlEventData {
        switch kind {
        case .sdkState:
            SdkStateEvent(isScanning: true, states: ["errorNoCredentials"], featureErrors: ["itemSync"])
        case .readerUpdated:
            reader
        case .readerUnavailable:
            ReaderUnavailableEvent(reader: "00002A01")
        case .readersScopeChanged:
            ReadersScopeChangedEvent(
                reader: "00002A01", rule: ReaderRuleInfo(reader: "00002A01", list: "deny", from: "operator"),
                uid: 1000)
        case .accessStarted:
            AccessStartedEvent(
                reader: "00002A01", readerName: "Front door", origin: "automatic", trigger: AccessTrigger.openNext,
                operation: "access", credential: credential)
        case .accessNextWindow:
            AccessNextWindowEvent(
                state: .closed, openedBy: "socket", expirySeconds: 5, uid: 1000, reason: .used,
                reader: "00002A01")
        case .accessCompleted:
            {
                var answer = ExchangeAnswer(
                    outcome: "actionPerformed", reader: "00002A01", origin: "manual", decision: "granted",
                    granted: true,
                    mode: "access", actions: [ActionInfo(id: 2, name: "Arm", type: "arm")], action: 2, error: "timeout",
                    timings: ExchangeTimings(
                        detectionMs: 300, connectMs: 5, resolveMs: 1, exchangeMs: 60, totalMs: 366, mtu: 185))
                answer.readerName = "Front door"
                answer.credential = credential
                answer.trigger = AccessTrigger.openNext
                answer.operation = "actions.perform 2"
                return answer
            }()
        case .secondFactorRequired:
            SecondFactorRequiredEvent(
                request: "sf-3", reader: "00002A01", credential: credential,
                prompt: "Enter your PIN to open the door", attemptsLeft: 5, timeoutSeconds: 30)
        case .secondFactorAnswered:
            SecondFactorAnsweredEvent(
                request: "sf-3", reader: "00002A01", credential: credential, result: .wrongPin,
                attemptsLeft: 4)
        case .credentialsChanged:
            CredentialsChangedEvent(
                reason: .items, credential: credential, state: "active", added: 1, updated: 2, removed: 3,
                priority: 10, replacedBy: "5c2a1e4f-0000-4000-8000-000000000000",
                fingerprint: "sha256//rhP4VOjrZRTd4/GujzLxAKGvv8Q9b70kXwXDzd/FTUc=")
        case .eventsLost:
            EventsLostEvent(count: 12, from: 1_795_312_591.4, to: 1_795_312_599.9)
        case .featureState:
            FeatureStateEvent(
                feature: "cloudConnection", state: .failed, error: "site.unreachable",
                message: "the site cannot be reached", retryInSeconds: 5)
        case .radioRecovery:
            RadioRecoveryEvent(
                adapter: "hci1", step: .recovered, silentSeconds: 11, after: "powerCycle", retryInSeconds: 30,
                error: "org.bluez.Error.Busy", previous: "hci0", reason: "stuck")
        case .readerHealth:
            ReaderHealthEvent(
                reader: "00002A01", name: "Front door", problems: ["fewerAdvertisements", "failingExchanges"],
                advertisementsPerMinute: 280, usualPerMinute: 561.5,
                pathLoss: .init(median: 31, spread: 2.5, samples: 64),
                exchanges: .init(windowSeconds: 3600, granted: 2, denied: 1, failed: ["exchange": 3]),
                heardSecondsAgo: 0, intervalSeconds: 60)
        }
    }

    static func minimal(_ kind: EventKind) -> any ControlEventData {
        switch kind {
        case .sdkState, .readerUnavailable, .secondFactorRequired, .eventsLost:
            full(kind)
        case .readerUpdated:
            ReaderInfo(
                id: "00002A01", name: nil, kind: "gallagher", site: "5117E001", address: "00:BB:01:00:00:00", rssi: -69,
                txPower: -59, measuredPathLoss: 10, distance: "near", autoConnectPathLoss: 20,
                manualConnectPathLoss: 40, isBleAutoConnectEnabled: true, isBleManualConnectEnabled: true,
                isSecondFactorRequired: false, isBleActionsEnabled: false, isInAutoConnectRange: true)
        case .readersScopeChanged:
            ReadersScopeChangedEvent(reader: nil, rule: nil, uid: 0)
        case .accessStarted:
            AccessStartedEvent(
                reader: "00002A01", readerName: nil, origin: "manual", trigger: nil, operation: "access",
                credential: credential)
        case .accessNextWindow:
            AccessNextWindowEvent(state: .open, openedBy: "button")
        case .accessCompleted:
            ExchangeAnswer(outcome: "failed", reader: "00002A01", origin: "manual")
        case .secondFactorAnswered:
            SecondFactorAnsweredEvent(request: "sf-3", reader: "00002A01", credential: credential, result: .accepted)
        case .credentialsChanged:
            CredentialsChangedEvent(reason: .registered, credential: nil)
        case .featureState:
            FeatureStateEvent(feature: "itemSync", state: .ok)
        case .radioRecovery:
            RadioRecoveryEvent(adapter: "hci1", step: .restartingDiscovery)
        case .readerHealth:
            ReaderHealthEvent(
                reader: "00002A01", name: nil, problems: [], advertisementsPerMinute: nil, usualPerMinute: nil,
                pathLoss: nil, exchanges: .init(windowSeconds: 3600, granted: 0, denied: 0, failed: [:]),
                heardSecondsAgo: 130, intervalSeconds: 60)
        }
    }
}
