import AccessCore
import AccessJSON
import ControlSocket
import FoundationEssentials

/// The reader scope between the socket and the core: params read and bounded, rules shown and
/// saved (docs/protocol.md "Reader scope").
public enum ReaderScopeCalls {
    /// `readers.setScope`'s params as a reader and its rule, refused with the reason when out
    /// of bounds.
    public static func rule(from params: ReaderRuleInfo) throws(RPCError) -> (ReaderID, ReaderScope.Rule) {
        guard let id = ReaderID(params.reader) else {
            throw .invalidParams("reader must be a reader id (up to eight hex digits)")
        }
        var rule = ReaderScope.Rule(
            pathLossOffset: params.pathLossOffset, automatic: params.automatic, manual: params.manual)
        switch params.list {
        case nil: break
        case "allow"?: rule.listing = .allowed
        case "deny"?: rule.listing = .denied
        case let other?: throw .invalidParams("list must be allow or deny, not \"\(other.prefix(32))\"")
        }
        if params.from != nil { throw .invalidParams("from is in answers only") }
        do {
            try ReaderScope.validate(rule)
        } catch {
            throw .invalidParams(error.message)
        }
        return (id, rule)
    }

    static func info(_ id: ReaderID, _ rule: ReaderScope.Rule, from: ReaderScope.Layer?) -> ReaderRuleInfo {
        ReaderRuleInfo(
            reader: id.description, list: rule.listing.map { $0 == .allowed ? "allow" : "deny" },
            pathLossOffset: rule.pathLossOffset, automatic: rule.automatic, manual: rule.manual,
            from: from?.rawValue)
    }

    static func answer(_ scope: ReaderScope) -> ReaderScopeAnswer {
        ReaderScopeAnswer(allowList: scope.hasAllowList, rules: scope.rules.map { info($0.id, $0.rule, from: $0.from) })
    }

    static func effective(_ scope: ReaderScope.Effective) -> ReaderScopeInfo {
        ReaderScopeInfo(
            automatic: scope.automatic, automaticBecause: scope.automaticBecause.rawValue, manual: scope.manual,
            manualBecause: scope.manualBecause.rawValue, pathLossOffset: scope.pathLossOffset,
            ruleFrom: scope.ruleFrom?.rawValue)
    }

    // MARK: Saved as a setting

    static let settingKey = "readerScope"

    /// The operator's rules as saved (JSON, bounded like the socket's).
    static func encode(_ rules: [ReaderID: ReaderScope.Rule]) -> String {
        let list = rules.sorted { $0.key < $1.key }.map { info($0.key, $0.value, from: nil) }
        return (try? JSONValue(encoding: list).jsonText) ?? "[]"
    }

    static func decode(_ text: String) throws -> [ReaderID: ReaderScope.Rule] {
        let list = try JSONValue.parse(text).decode([ReaderRuleInfo].self)
        var rules: [ReaderID: ReaderScope.Rule] = [:]
        for item in list.prefix(ReaderScope.ruleLimit) {
            let (id, rule) = try rule(from: item)
            rules[id] = rule
        }
        return rules
    }
}
