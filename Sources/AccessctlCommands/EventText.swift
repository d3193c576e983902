import AccessJSON
import ControlSocket

/// One line per event for people (`accessctl events`): what happened, to which reader, with
/// the outcome and where the time went, as `journalctl` shows a message rather than its fields.
/// `--json` keeps the event object as the socket sends it.
enum EventText {
    /// The line for an event as it came (`kind` and `data`): its data as JSON when it is
    /// not of its kind's type (a newer accessd's kind, or a field this accessctl cannot read).
    static func describe(kind: String, data: JSONValue) -> String {
        guard let event = try? ControlEvent(kind: kind, data: data) else { return data.jsonText }
        return describe(event)
    }

    static func describe(_ event: ControlEvent) -> String {
        switch event {
        case .accessCompleted(let answer):
            let origin = answer.trigger == AccessTrigger.openNext ? "open-next" : answer.origin
            return "\(reader(answer.reader, answer.readerName)): \(origin) \(describeOutcome(answer))"
        case .accessStarted(let started):
            let origin = started.trigger == AccessTrigger.openNext ? "open-next" : started.origin
            return "\(reader(started.reader, started.readerName)): \(origin) \(started.operation) started"
        case .accessNextWindow(let window):
            let by = " (\(window.openedBy))"
            switch window.reason {
            case nil:
                return "open-next: the next door within manual range opens for \(window.expirySeconds ?? 0) s\(by)"
            case .used?: return "open-next: \(reader(window.reader, nil)) is the next door\(by)"
            case let reason?: return "open-next: \(reason.rawValue), no door opened\(by)"
            }
        case .secondFactorRequired(let prompt):
            return "\(reader(prompt.reader, nil)) asks for a PIN: accessctl pin \(prompt.request) "
                + "(\(prompt.attemptsLeft) attempts left, \(prompt.timeoutSeconds) s)"
        case .secondFactorAnswered(let answer):
            let at = reader(answer.reader, nil)
            let left = answer.attemptsLeft ?? 0
            switch answer.result {
            case .accepted: return "\(at): PIN accepted (\(answer.request))"
            case .wrongPin: return "\(at): wrong PIN (\(left) attempt\(left == 1 ? "" : "s") left)"
            case .lockedOut: return "\(at): wrong PIN, the second factor is now locked (accessctl credentials unlock)"
            case .cancelled: return "\(at): PIN prompt declined"
            default: return "\(at): PIN \(answer.result.rawValue)"
            }
        case .sdkState(let state):
            return
                "scanning \(state.isScanning ? "on" : "off"); states: \(state.states.isEmpty ? "ok" : state.states.joined(separator: ", "))"
                + (state.featureErrors.isEmpty
                    ? "" : "; features failing: \(state.featureErrors.joined(separator: ", "))")
        case .readerUpdated(let info):
            let range =
                info.isInAutoConnectRange
                ? "in auto range"
                : info.measuredPathLoss <= Double(info.manualConnectPathLoss) ? "in manual range" : "out of range"
            return
                "\(reader(info.id, info.name)): path loss \(Int(info.measuredPathLoss.rounded())) dB, \(info.distance), \(range)"
        case .readerUnavailable(let gone):
            return "\(reader(gone.reader, nil)): gone"
        case .readersScopeChanged(let change):
            let who = " by uid \(change.uid)"
            let whom = change.reader.map { reader($0, nil) } ?? "every reader"
            guard let rule = change.rule else { return "\(whom): scope back to the configuration's\(who)" }
            return "\(whom): scope set\(who): \(ScopeText.rule(rule))"
        case .credentialsChanged(let change):
            let id = change.credential.map { "credential \($0.prefix(8))…" } ?? "a credential"
            switch change.reason {
            case .state: return "\(id): \(change.state ?? "?") by the site"
            case .items: return "\(id): items +\(change.added ?? 0) ~\(change.updated ?? 0) −\(change.removed ?? 0)"
            default: return "\(id): \(change.reason.rawValue)"
            }
        case .featureState(let feature):
            guard feature.state == .failed else { return "\(feature.feature): ok" }
            let retry = feature.retryInSeconds.map { " (next try in \($0) s)" } ?? ""
            return "\(feature.feature): failed: \(feature.message ?? feature.error ?? "?")\(retry)"
        case .eventsLost(let lost):
            return "!! \(lost.count) events lost while the journal could not be written"
        case .radioRecovery(let step):
            let silent = step.silentSeconds.map { " after \($0) s of silence" } ?? ""
            switch step.step {
            case .restartingDiscovery: return "\(step.adapter): hears nothing\(silent): restarting discovery"
            case .powerCycling: return "\(step.adapter): still hears nothing\(silent): power-cycling the adapter"
            case .cannotPowerCycle: return "\(step.adapter): cannot be power-cycled: \(step.error ?? "?")"
            case .stuck:
                let retry = step.retryInSeconds.map { "; next power cycle in \($0) s" } ?? ""
                return "!! \(step.adapter): stuck\(silent): unplug and replug it, or reboot the kiosk\(retry)"
            case .recovered: return "\(step.adapter): hears again after \(step.after ?? "?")\(silent)"
            case .switchedAdapter:
                let from = step.previous.map { "from \($0) " } ?? ""
                return "scanning moved \(from)to \(step.adapter) (\(step.reason ?? "?"))"
            default: return "\(step.adapter): \(step.step.rawValue)"
            }
        case .readerHealth(let health):
            return "\(reader(health.reader, health.name)): " + describeHealth(health)
        }
    }

    /// `health ok (560/min, usually 560); path loss 31 dB ±2.5; exchanges in 60 min: 3 granted`
    static func describeHealth(_ health: ReaderHealthEvent) -> String {
        let problems = health.problems.isEmpty ? "health ok" : "!! " + health.problems.joined(separator: ", ")
        var rate = health.advertisementsPerMinute.map { "\(number($0))/min" } ?? "rate not measured"
        if let usual = health.usualPerMinute { rate += ", usually \(number(usual))" }
        var text = "\(problems) (\(rate))"
        if health.heardSecondsAgo >= health.intervalSeconds { text += "; last heard \(health.heardSecondsAgo) s ago" }
        if let loss = health.pathLoss { text += "; path loss \(number(loss.median)) dB ±\(number(loss.spread))" }
        let exchanges = health.exchanges
        var counts: [String] = []
        if exchanges.granted > 0 { counts.append("\(exchanges.granted) granted") }
        if exchanges.denied > 0 { counts.append("\(exchanges.denied) denied") }
        for (phase, count) in exchanges.failed.sorted(by: { $0.key < $1.key }) where count > 0 {
            counts.append("\(count) failed in \(phase)")
        }
        if !counts.isEmpty {
            text += "; exchanges in \(exchanges.windowSeconds / 60) min: " + counts.joined(separator: ", ")
        }
        return text
    }

    private static func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    private static func reader(_ id: String?, _ name: String?) -> String {
        let id = id ?? "?"
        guard let name, !name.isEmpty else { return "reader \(id)" }
        return "reader \(id) (\(name))"
    }
}
