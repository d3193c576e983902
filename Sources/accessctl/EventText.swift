import AccessJSON
import ControlSocket

/// One line per event for people (`accessctl events`): what happened, to which reader, with
/// the outcome and where the time went, as `journalctl` shows a message rather than its fields.
/// `--json` keeps the event object as the socket sends it.
enum EventText {
    static func describe(kind: String, data: JSONValue) -> String {
        switch EventKind(rawValue: kind) {
        case .accessCompleted?:
            guard let answer = try? data.decode(ExchangeAnswer.self) else { break }
            let origin = answer.trigger == "openNext" ? "open-next" : answer.origin
            return "\(reader(answer.reader, answer.readerName)): \(origin) \(describeOutcome(answer))"
        case .accessStarted?:
            let origin = data["trigger"] == "openNext" ? "open-next" : data["origin"]?.string ?? "?"
            return "\(reader(data["reader"]?.string, data["readerName"]?.string)): \(origin) "
                + "\(data["operation"]?.string ?? "access") started"
        case .accessNextWindow?:
            let by = data["openedBy"]?.string.map { " (\($0))" } ?? ""
            switch data["reason"]?.string {
            case nil: return "open-next: the next door within manual range opens for \(data["expirySeconds"]?.int ?? 0) s\(by)"
            case "used"?: return "open-next: \(reader(data["reader"]?.string, nil)) is the next door\(by)"
            case let reason?: return "open-next: \(reason), no door opened\(by)"
            }
        case .secondFactorRequired?:
            return "\(reader(data["reader"]?.string, nil)) asks for a PIN: accessctl pin \(data["request"]?.string ?? "?") "
                + "(\(data["attemptsLeft"]?.int ?? 0) attempts left, \(data["timeoutSeconds"]?.int ?? 0) s)"
        case .secondFactorAnswered?:
            let at = reader(data["reader"]?.string, nil)
            let left = data["attemptsLeft"]?.int ?? 0
            switch data["result"]?.string {
            case "accepted"?: return "\(at): PIN accepted (\(data["request"]?.string ?? "?"))"
            case "wrongPin"?: return "\(at): wrong PIN (\(left) attempt\(left == 1 ? "" : "s") left)"
            case "lockedOut"?: return "\(at): wrong PIN, the second factor is now locked (accessctl credentials unlock)"
            case "cancelled"?: return "\(at): PIN prompt declined"
            default: break
            }
        case .sdkState?:
            let states = data["states"]?.array?.compactMap(\.string) ?? []
            let features = data["featureErrors"]?.array?.compactMap(\.string) ?? []
            return "scanning \(data["isScanning"] == true ? "on" : "off"); states: \(states.isEmpty ? "ok" : states.joined(separator: ", "))"
                + (features.isEmpty ? "" : "; features failing: \(features.joined(separator: ", "))")
        case .readerUpdated?:
            guard let info = try? data.decode(ReaderInfo.self) else { break }
            let range = info.isInAutoConnectRange ? "in auto range"
                : info.measuredPathLoss <= Double(info.manualConnectPathLoss) ? "in manual range" : "out of range"
            return "\(reader(info.id, info.name)): path loss \(Int(info.measuredPathLoss.rounded())) dB, \(info.distance), \(range)"
        case .readerUnavailable?:
            return "\(reader(data["id"]?.string, nil)): gone"
        case .readersScopeChanged?:
            let who = data["uid"]?.int.map { " by uid \($0)" } ?? ""
            let whom = data["reader"]?.string.map { reader($0, nil) } ?? "every reader"
            guard let rule = try? data["rule"]?.decode(ReaderRuleInfo.self) else {
                return "\(whom): scope back to the configuration's\(who)"
            }
            return "\(whom): scope set\(who): \(ScopeText.rule(rule))"
        case .credentialsChanged?:
            let id = data["id"]?.string.map { "credential \($0.prefix(8))…" } ?? "a credential"
            switch data["reason"]?.string {
            case "state"?: return "\(id): \(data["state"]?.string ?? "?") by the site"
            case "items"?:
                return "\(id): items +\(data["added"]?.int ?? 0) ~\(data["updated"]?.int ?? 0) −\(data["removed"]?.int ?? 0)"
            case let reason?: return "\(id): \(reason)"
            case nil: break
            }
        case .featureState?:
            let feature = data["feature"]?.string ?? "?"
            guard data["state"] == "failed" else { return "\(feature): ok" }
            let retry = data["retryInSeconds"]?.int.map { " (next try in \($0) s)" } ?? ""
            return "\(feature): failed: \(data["message"]?.string ?? data["error"]?.string ?? "?")\(retry)"
        case .eventsLost?:
            return "!! \(data["count"]?.int ?? 0) events lost while the journal could not be written"
        case nil:
            break
        }
        return data.jsonText
    }

    private static func reader(_ id: String?, _ name: String?) -> String {
        let id = id ?? "?"
        guard let name, !name.isEmpty else { return "reader \(id)" }
        return "reader \(id) (\(name))"
    }
}
