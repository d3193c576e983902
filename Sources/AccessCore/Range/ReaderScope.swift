/// Which readers this kiosk opens, and how near it must be: the site's advertisement says what
/// each reader offers, and the scope narrows it locally (issue #13, item 1). A gateway mounted
/// between two doors can leave one out, limit automatic access to the door it serves, or
/// calibrate one reader whose mounting makes it seem nearer or further than it is.
///
/// Rules come from two layers: the configuration file's (`[readers]` and `[reader.ID]`) and
/// an operator's (`readers.setScope`, saved like the other run-time settings). For a given
/// reader the operator's rule, when there is one, replaces the file's whole; readers without
/// an operator's rule keep the file's. A scope can only take away what a reader offers: it
/// never turns on automatic or manual access that the reader's advertisement does not.
public struct ReaderScope: Hashable, Sendable {
    /// One reader's rule.
    public struct Rule: Hashable, Sendable {
        /// The reader is on the allow list (automatic access only to listed readers, when any
        /// is listed) or the deny list (never connected to, automatically or on request).
        public enum Listing: String, Hashable, Sendable, CaseIterable {
            case allowed, denied
        }

        public var listing: Listing?
        /// dB added to this reader's measured path loss, on top of `[range] sensitivity`:
        /// negative makes it seem nearer (opens from further), positive further.
        public var pathLossOffset: Double?
        /// `false` turns automatic access to this reader off; `true` or nil leaves it as
        /// the reader offers.
        public var automatic: Bool?
        /// `false` turns manual access (`access.request`) to this reader off.
        public var manual: Bool?

        public init(listing: Listing? = nil, pathLossOffset: Double? = nil, automatic: Bool? = nil, manual: Bool? = nil)
        {
            self.listing = listing
            self.pathLossOffset = pathLossOffset
            self.automatic = automatic
            self.manual = manual
        }

        public var isEmpty: Bool { listing == nil && pathLossOffset == nil && automatic == nil && manual == nil }
    }

    /// Where a reader's rule comes from.
    public enum Layer: String, Hashable, Sendable {
        case configuration, `operator`
    }

    /// Why automatic or manual access to a reader is on or off.
    public enum Because: String, Hashable, Sendable {
        /// As the reader advertises: it offers it.
        case offered
        /// The reader does not offer it (its advertisement's flags; the site configures it).
        case notOffered
        /// On the allow list (automatic access).
        case allowed
        /// On the deny list.
        case denied
        /// Readers are allowed by list and this one is not on it (automatic access).
        case notAllowed
        /// Its rule turns it off (`automatic = false`, `manual = false`).
        case turnedOff
    }

    /// What applies to one reader, and why.
    public struct Effective: Hashable, Sendable {
        public var automatic: Bool
        public var automaticBecause: Because
        public var manual: Bool
        public var manualBecause: Because
        /// The reader's own offset (0 without one); `[range] sensitivity` applies as well.
        public var pathLossOffset: Double
        /// The layer of the reader's rule, nil when no rule names it.
        public var ruleFrom: Layer?

        public static let unrestricted = Effective(
            automatic: true, automaticBecause: .offered, manual: true,
            manualBecause: .offered, pathLossOffset: 0, ruleFrom: nil)
    }

    /// Rules a layer may hold: a kiosk serves a handful of doors; a file or an operator
    /// listing thousands is a mistake, refused with this bound.
    public static let ruleLimit = 256
    /// The bound on a reader's path-loss offset (dB): beyond it a reader would be in auto
    /// range from across a building, or never.
    public static let offsetLimit = 30.0

    public private(set) var configuration: [ReaderID: Rule]
    public private(set) var operatorRules: [ReaderID: Rule]
    /// Whether any reader is on the allow list (in force), kept with the rules.
    public private(set) var hasAllowList = false

    public init(configuration: [ReaderID: Rule] = [:], operatorRules: [ReaderID: Rule] = [:]) {
        self.configuration = configuration.filter { !$0.value.isEmpty }
        self.operatorRules = operatorRules
        hasAllowList = computeHasAllowList()
    }

    public var isEmpty: Bool { configuration.isEmpty && operatorRules.isEmpty }

    /// The rule in force for `id` and its layer.
    public func rule(for id: ReaderID) -> (rule: Rule, from: Layer)? {
        if let rule = operatorRules[id] { return (rule, .operator) }
        if let rule = configuration[id] { return (rule, .configuration) }
        return nil
    }

    /// Every reader with a rule in force, ordered by id.
    public var rules: [(id: ReaderID, rule: Rule, from: Layer)] {
        Set(configuration.keys).union(operatorRules.keys).sorted().compactMap { id in
            rule(for: id).map { (id, $0.rule, $0.from) }
        }
    }

    /// The path-loss offset of `id` (0 without a rule): read for every advertisement, so no
    /// more than a lookup when there are rules and none at all when there are not.
    public func pathLossOffset(for id: ReaderID) -> Double {
        if isEmpty { return 0 }
        return rule(for: id)?.rule.pathLossOffset ?? 0
    }

    /// What applies to reader `id`, which advertises `flags`.
    public func effective(for id: ReaderID, offering flags: ReaderFlags) -> Effective {
        let found = isEmpty ? nil : rule(for: id)
        let rule = found?.rule ?? Rule()
        var result = Effective.unrestricted
        result.pathLossOffset = rule.pathLossOffset ?? 0
        result.ruleFrom = found?.from

        if !flags.contains(.manualConnectEnabled) {
            (result.manual, result.manualBecause) = (false, .notOffered)
        } else if rule.listing == .denied {
            (result.manual, result.manualBecause) = (false, .denied)
        } else if rule.manual == false {
            (result.manual, result.manualBecause) = (false, .turnedOff)
        }

        if !flags.contains(.autoConnectEnabled) {
            (result.automatic, result.automaticBecause) = (false, .notOffered)
        } else if rule.listing == .denied {
            (result.automatic, result.automaticBecause) = (false, .denied)
        } else if hasAllowList && rule.listing != .allowed {
            (result.automatic, result.automaticBecause) = (false, .notAllowed)
        } else if rule.automatic == false {
            (result.automatic, result.automaticBecause) = (false, .turnedOff)
        } else if rule.listing == .allowed {
            result.automaticBecause = .allowed
        }
        return result
    }

    /// Whether `id` is on the deny list in force: nothing is ever sent to it.
    public func isDenied(_ id: ReaderID) -> Bool {
        !isEmpty && rule(for: id)?.rule.listing == .denied
    }

    /// Sets (or, with an empty rule, removes) an operator's rule for `id`. Throws when the
    /// rule is out of bounds or the operator's layer is full.
    public mutating func setOperatorRule(_ rule: Rule, for id: ReaderID) throws(ReaderScopeError) {
        try Self.validate(rule)
        if rule.isEmpty {
            // An empty rule still replaces the file's: "nothing special about this reader".
            guard operatorRules[id] != nil || operatorRules.count < Self.ruleLimit else {
                throw .tooManyRules(limit: Self.ruleLimit)
            }
        } else if operatorRules[id] == nil && operatorRules.count >= Self.ruleLimit {
            throw .tooManyRules(limit: Self.ruleLimit)
        }
        operatorRules[id] = rule
        hasAllowList = computeHasAllowList()
    }

    /// Drops the operator's rule for `id` (nil: every operator's rule): the file's applies again.
    public mutating func resetOperatorRules(_ id: ReaderID? = nil) {
        if let id { operatorRules[id] = nil } else { operatorRules.removeAll() }
        hasAllowList = computeHasAllowList()
    }

    /// Replaces the file's layer (a reload); the operator's stays.
    public mutating func replaceConfiguration(_ rules: [ReaderID: Rule]) {
        configuration = rules.filter { !$0.value.isEmpty }
        hasAllowList = computeHasAllowList()
    }

    public static func validate(_ rule: Rule) throws(ReaderScopeError) {
        if let offset = rule.pathLossOffset, !(offset.isFinite && abs(offset) <= offsetLimit) {
            throw .offsetOutOfRange(limit: offsetLimit)
        }
    }

    private func computeHasAllowList() -> Bool {
        for id in Set(configuration.keys).union(operatorRules.keys) where rule(for: id)?.rule.listing == .allowed {
            return true
        }
        return false
    }
}

/// Why a scope rule was refused.
public enum ReaderScopeError: Error, Hashable, Sendable {
    case offsetOutOfRange(limit: Double)
    case tooManyRules(limit: Int)

    public var message: String {
        switch self {
        case .offsetOutOfRange(let limit): "a path-loss offset is between -\(Int(limit)) and \(Int(limit)) dB"
        case .tooManyRules(let limit): "at most \(limit) readers can have a rule"
        }
    }
}
