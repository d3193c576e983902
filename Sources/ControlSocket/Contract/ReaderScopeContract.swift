/// The reader scope on the socket (`readers.getScope`, `readers.setScope`,
/// `readers.resetScope`, the `scope` of `readers.list`; docs/protocol.md "Reader scope").

/// One reader's rule. As params of `readers.setScope` it is the operator's rule for the
/// reader, replacing whatever rule it had (absent fields: nothing special); in answers,
/// `from` says which layer it comes from (`configuration` or `operator`).
public struct ReaderRuleInfo: Codable, Sendable, Hashable {
    public var reader: String
    /// `allow` or `deny`; absent: on neither list.
    public var list: String?
    public var pathLossOffset: Double?
    public var automatic: Bool?
    public var manual: Bool?
    public var from: String?

    public init(
        reader: String, list: String? = nil, pathLossOffset: Double? = nil, automatic: Bool? = nil,
        manual: Bool? = nil, from: String? = nil
    ) {
        self.reader = reader
        self.list = list
        self.pathLossOffset = pathLossOffset
        self.automatic = automatic
        self.manual = manual
        self.from = from
    }
}

/// `readers.getScope`, and the answer of `readers.setScope` and `readers.resetScope`: every
/// rule in force, ordered by reader.
public struct ReaderScopeAnswer: Codable, Sendable, Hashable {
    /// Whether any reader is on the allow list: then only those get automatic access.
    public var allowList: Bool
    public var rules: [ReaderRuleInfo]
    public init(allowList: Bool, rules: [ReaderRuleInfo]) {
        self.allowList = allowList
        self.rules = rules
    }
}

/// `readers.resetScope`: the operator's rule for `reader` dropped, or every one without it.
public struct ResetScopeParams: Codable, Sendable, Hashable {
    public var reader: String?
    public init(reader: String? = nil) { self.reader = reader }
}

/// What applies to a heard reader (`readers.list`, `reader.updated`): automatic and manual
/// access as the kiosk's scope leaves the reader's offer, each with why.
public struct ReaderScopeInfo: Codable, Sendable, Hashable {
    public var automatic: Bool
    /// `offered`, `notOffered`, `allowed`, `denied`, `notAllowed`, `turnedOff`.
    public var automaticBecause: String
    public var manual: Bool
    public var manualBecause: String
    /// The reader's own offset (dB), on top of `[range] sensitivity`.
    public var pathLossOffset: Double
    /// `configuration` or `operator` when a rule names the reader.
    public var ruleFrom: String?

    public init(
        automatic: Bool, automaticBecause: String, manual: Bool, manualBecause: String, pathLossOffset: Double,
        ruleFrom: String?
    ) {
        self.automatic = automatic
        self.automaticBecause = automaticBecause
        self.manual = manual
        self.manualBecause = manualBecause
        self.pathLossOffset = pathLossOffset
        self.ruleFrom = ruleFrom
    }
}

extension ControlCalls {
    public enum ReadersGetScope: ControlCall {
        public typealias Params = NoParams
        public typealias Answer = ReaderScopeAnswer
        public static let method = ControlMethod.readersGetScope
    }

    public enum ReadersSetScope: ControlCall {
        public typealias Params = ReaderRuleInfo
        public typealias Answer = ReaderScopeAnswer
        public static let method = ControlMethod.readersSetScope
    }

    public enum ReadersResetScope: ControlCall {
        public typealias Params = ResetScopeParams
        public typealias Answer = ReaderScopeAnswer
        public static let method = ControlMethod.readersResetScope
    }
}
