import AccessJSON
import Crypto
import ControlSocket
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
    private static let knownMessageIDs: [String: String] = Dictionary(uniqueKeysWithValues: EventKind.allCases.map {
        ($0.rawValue, derivedMessageID(kind: $0.rawValue))
    })

    private static func derivedMessageID(kind: String) -> String {
        SHA256.hash(data: Array("accessd.event.\(kind)".utf8)).prefix(16)
            .map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }

    /// An event's level: decisions and state changes at notice, what a fleet alerts on at
    /// warning, reader sightings at debug.
    static func level(kind: String, data: JSONValue) -> Logger.Level {
        switch kind {
        case "access.completed", "sdk.state", "credentials.changed", "secondFactor.required": .notice
        case "feature.state": data["state"]?.string == "failed" ? .warning : .notice
        case "events.lost": .warning
        case "secondFactor.answered": ["wrongPin", "lockedOut"].contains(data["result"]?.string ?? "") ? .warning : .notice
        case "reader.updated": .debug
        default: .info
        }
    }

    /// An event's fields (metadata keys; `name(for:)` gives their journal names).
    static func metadata(kind: String, sequence: Int64, data: JSONValue) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["messageID": "\(messageID(kind: kind))", "kind": "\(kind)", "seq": "\(sequence)"]
        let readerKey = kind.hasPrefix("reader.") ? "id" : "reader"
        if let reader = data[readerKey]?.string { metadata["reader"] = "\(reader)" }
        let credentialKey = kind == "credentials.changed" ? "id" : "credential"
        if let credential = data[credentialKey]?.string { metadata["credential"] = "\(credential)" }
        for key in ["decision", "outcome", "origin", "error", "feature", "state", "reason", "result"] {
            if let value = data[key]?.string { metadata[key] = "\(value)" }
        }
        if let granted = data["granted"]?.bool { metadata["granted"] = "\(granted)" }
        if kind == "sdk.state", let states = data["states"]?.array {
            metadata["sdkState"] = "\(states.compactMap(\.string).joined(separator: ","))"
        }
        return metadata
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}
