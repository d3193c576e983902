import AccessJSON
import ControlSocket
import Crypto
import Logging

/// The journal fields accessd's entries carry (docs/operations.md, "Logs"): the metadata
/// keys of its log calls, renamed where a fleet queries them, and `MESSAGE_ID`, one stable
/// id per event kind, so `journalctl MESSAGE_ID=…` finds every decision of every kiosk.
public enum JournalFields {
    /// Metadata keys with a name of their own; any other key `k` becomes `ACCESSD_K`.
    static let names: [String: String] = [
        "reader": "READER_ID",
        "credential": "CREDENTIAL_ID",
        "decision": "DECISION",
        "sdkState": "SDK_STATE",
        "messageID": "MESSAGE_ID",
    ]

    static func name(for key: String) -> String {
        if let name = names[key] { return name }
        // Journal field names: upper-case letters, digits and underscores.
        let cleaned = key.uppercased().unicodeScalars.map {
            ("A"..."Z").contains($0) || ("0"..."9").contains($0) ? Character($0) : "_"
        }
        return "ACCESSD_" + String(cleaned)
    }

    /// The `MESSAGE_ID` of an event kind: the first 16 bytes of SHA-256("accessd.event." +
    /// kind), in hex. Derived, so it never changes for a kind; listed in docs/operations.md.
    public static func messageID(kind: String) -> String {
        knownMessageIDs[kind] ?? derivedMessageID(kind: kind)
    }

    /// Computed once: every event carries one.
    private static let knownMessageIDs: [String: String] = Dictionary(
        uniqueKeysWithValues: EventKind.allCases.map {
            ($0.rawValue, derivedMessageID(kind: $0.rawValue))
        })

    private static func derivedMessageID(kind: String) -> String {
        SHA256.hash(data: Array("accessd.event.\(kind)".utf8)).prefix(16)
            .map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }

    /// An event's level: decisions and state changes at notice, what a fleet alerts on at
    /// warning, reader sightings at debug.
    static func level(_ event: ControlEvent) -> Logger.Level {
        switch event {
        case .accessCompleted, .sdkState, .credentialsChanged, .secondFactorRequired: .notice
        case .featureState(let feature): feature.state == .failed ? .warning : .notice
        case .eventsLost: .warning
        case .radioRecovery(let step) where step.step == .switchedAdapter:
            step.reason == "preferredBack" ? .notice : .warning
        case .radioRecovery(let step):
            [.powerCycling, .cannotPowerCycle, .stuck].contains(step.step) ? .warning : .notice
        case .secondFactorAnswered(let answer): [.wrongPin, .lockedOut].contains(answer.result) ? .warning : .notice
        case .readerUpdated: .debug
        // A reader with a problem is what a site alerts on; a healthy one's record is routine.
        case .readerHealth(let health): health.problems.isEmpty ? .info : .warning
        case .readerUnavailable, .readersScopeChanged, .accessStarted, .accessNextWindow: .info
        }
    }

    /// An event's fields (metadata keys; `name(for:)` gives their journal names): the reader
    /// and the credential it is about, and the few values a fleet searches by.
    static func metadata(_ event: ControlEvent, sequence: Int64) -> Logger.Metadata {
        let kind = event.kind.rawValue
        var metadata: Logger.Metadata = [
            "messageID": "\(messageID(kind: kind))", "kind": "\(kind)", "seq": "\(sequence)",
        ]
        if let reader = event.reader { metadata["reader"] = "\(reader)" }
        if let credential = event.credential { metadata["credential"] = "\(credential)" }
        var values: [String: String?] = [:]
        switch event {
        case .accessCompleted(let answer):
            values = [
                "decision": answer.decision, "outcome": answer.outcome, "origin": answer.origin, "error": answer.error,
            ]
            if let granted = answer.granted { metadata["granted"] = "\(granted)" }
        case .accessStarted(let started):
            values = ["origin": started.origin]
        case .accessNextWindow(let window):
            values = ["state": window.state.rawValue, "reason": window.reason?.rawValue]
        case .featureState(let feature):
            values = ["feature": feature.feature, "state": feature.state.rawValue, "error": feature.error]
        case .credentialsChanged(let change):
            values = ["reason": change.reason.rawValue, "state": change.state]
        case .secondFactorAnswered(let answer):
            values = ["result": answer.result.rawValue]
        case .radioRecovery(let step):
            values = [
                "adapter": step.adapter, "step": step.step.rawValue, "after": step.after, "error": step.error,
                "silentSeconds": step.silentSeconds.map(String.init),
                "retryInSeconds": step.retryInSeconds.map(String.init),
            ]
        case .sdkState(let state):
            metadata["sdkState"] = "\(state.states.joined(separator: ","))"
        case .readerHealth(let health):
            values = ["problems": health.problems.isEmpty ? "none" : health.problems.joined(separator: ",")]
        case .readerUpdated, .readerUnavailable, .readersScopeChanged, .secondFactorRequired, .eventsLost:
            break
        }
        for case (let key, let value?) in values { metadata[key] = "\(value)" }
        return metadata
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}
