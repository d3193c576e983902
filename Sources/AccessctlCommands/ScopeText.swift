import ControlSocket

/// The reader scope in words (`accessctl readers scope`, `readers.scopeChanged` events, the
/// scope column of `accessctl readers`).
enum ScopeText {
    /// "deny", "allow, offset -3 dB", "automatic off, manual off"; "no restriction" for none.
    static func rule(_ rule: ReaderRuleInfo) -> String {
        var parts: [String] = []
        if let list = rule.list { parts.append(list) }
        if let offset = rule.pathLossOffset { parts.append("offset \(decibels(offset))") }
        if rule.automatic == false { parts.append("automatic off") }
        if rule.manual == false { parts.append("manual off") }
        return parts.isEmpty ? "no restriction" : parts.joined(separator: ", ")
    }

    static func decibels(_ value: Double) -> String {
        let text = value == value.rounded() ? String(Int(value)) : String(value)
        return (value > 0 ? "+" : "") + text + " dB"
    }

    /// One reader's effective scope, shortest first, with where its rule comes from ("file" or
    /// "operator"): "" when nothing restricts it.
    static func effective(_ scope: ReaderScopeInfo?) -> String {
        guard let scope else { return "" }
        let from = scope.ruleFrom.map { " (\($0 == "configuration" ? "file" : $0))" } ?? ""
        if scope.automaticBecause == "denied" { return "denied" + from }
        var parts: [String] = []
        if !scope.automatic, scope.automaticBecause != "notOffered" {
            parts.append(scope.automaticBecause == "notAllowed" ? "auto: not allowed" : "auto: off")
        }
        if !scope.manual, scope.manualBecause != "notOffered" { parts.append("manual: off") }
        if scope.pathLossOffset != 0 { parts.append(decibels(scope.pathLossOffset)) }
        return parts.joined(separator: ", ")
            + (parts.isEmpty || scope.automaticBecause == "notAllowed" && parts.count == 1 ? "" : from)
    }
}
