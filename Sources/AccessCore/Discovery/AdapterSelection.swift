/// Which of the kiosk's adapters accessd scans on (issue #38, part 2; docs/bluez.md "Several
/// adapters"). The policy:
///
/// - Adapters are preferred in `order` (`[bluetooth] adapters`; with `auto`, every adapter
///   BlueZ offers, by index: hci0 before hci1 before hci10).
/// - An adapter is **usable** when BlueZ lists it powered, not blocked and fit
///   (`AdapterFitness`), and it is not in quarantine.
/// - accessd leaves the adapter in use **at once** when it stops being usable (removed,
///   powered off by someone else, blocked, unfit), for the most preferred usable one. One
///   that has gone deaf (the recovery ladder's first silence when another adapter is usable,
///   or its stuck verdict) is put in **quarantine** for `quarantine` (or until it is heard
///   again) and left the same way: it is not taken back before, so a radio that wedges again
///   costs one failover per quarantine, not a flap.
/// - It **returns** to a more preferred adapter once that one has been usable for
///   `returnAfter` without a break, and only between exchanges: a short blip (a power cycle,
///   a USB reset) never moves it twice.
/// - With nothing usable it keeps, or takes, the most preferred adapter present (fit first,
///   then powered), so that the SDK state says what is wrong with it (off, blocked, unfit).
///
/// A value machine: the shell hands it what BlueZ reports and the time, and uses the adapter
/// it names.
public struct AdapterSelection: Sendable {
    public struct Policy: Hashable, Sendable {
        /// Adapter names (`hci1`) in preference order; nil: every adapter, by index.
        public var order: [String]?
        public var returnAfter: Duration
        public var quarantine: Duration

        public init(order: [String]? = nil, returnAfter: Duration = .seconds(30), quarantine: Duration = .seconds(600))
        {
            self.order = order
            self.returnAfter = returnAfter
            self.quarantine = quarantine
        }
    }

    /// An adapter as BlueZ reports it.
    public struct Adapter: Hashable, Sendable {
        /// `hci1`.
        public var name: String
        public var powered: Bool
        public var blocked: Bool
        public var fit: Bool

        public init(name: String, powered: Bool, blocked: Bool = false, fit: Bool = true) {
            self.name = name
            self.powered = powered
            self.blocked = blocked
            self.fit = fit
        }
    }

    public let policy: Policy
    /// The adapter accessd scans on, or nil.
    public private(set) var current: String?
    /// Since when each usable adapter has been usable without a break.
    private var usableSince: [String: Timestamp] = [:]
    /// Adapters reported stuck, and until when they are not taken back.
    private var quarantinedUntil: [String: Timestamp] = [:]

    public init(policy: Policy = Policy()) {
        self.policy = policy
    }

    /// Whether `name` is one accessd may use at all (in `order`, when there is one).
    public func considers(_ name: String) -> Bool {
        policy.order.map { $0.contains(name) } ?? true
    }

    /// Whether an adapter other than the one in use is usable now: a deaf one can be left.
    public func hasStandby(_ adapters: [Adapter], at now: Timestamp) -> Bool {
        adapters.contains { $0.name != current && considers($0.name) && isUsable($0, at: now) }
    }

    /// Whether `name` sits out a quarantine at `now`.
    public func isQuarantined(_ name: String, at now: Timestamp) -> Bool {
        quarantinedUntil[name].map { now < $0 } ?? false
    }

    /// When `name`'s quarantine ends, while it sits one out.
    public func quarantineEnds(_ name: String, at now: Timestamp) -> Timestamp? {
        quarantinedUntil[name].flatMap { now < $0 ? $0 : nil }
    }

    /// The adapters present now (every report, and once a second); `exchangeActive`: an
    /// exchange or a held link runs. True when `current` changed.
    @discardableResult
    public mutating func update(_ adapters: [Adapter], exchangeActive: Bool, at now: Timestamp) -> Bool {
        let present = adapters.filter { considers($0.name) }.sorted { rank($0.name) < rank($1.name) }
        for adapter in present {
            if isUsable(adapter, at: now) {
                if usableSince[adapter.name] == nil { usableSince[adapter.name] = now }
            } else {
                usableSince[adapter.name] = nil
            }
        }
        for name in usableSince.keys where !present.contains(where: { $0.name == name }) { usableSince[name] = nil }
        quarantinedUntil = quarantinedUntil.filter { now < $0.value }

        let chosen = choose(present, exchangeActive: exchangeActive, at: now)
        guard chosen != current else { return false }
        current = chosen
        return true
    }

    /// `name` has gone deaf (silent, or stuck): it is left (at the next `update`) when another
    /// adapter is usable, and not taken back for `quarantine`.
    public mutating func quarantine(_ name: String, at now: Timestamp) {
        quarantinedUntil[name] = now + policy.quarantine
        usableSince[name] = nil
    }

    /// `name` heard again (the ladder's backoff power cycle brought it back): it is usable
    /// again at once.
    public mutating func recovered(_ name: String) {
        quarantinedUntil[name] = nil
    }

    private func choose(_ present: [Adapter], exchangeActive: Bool, at now: Timestamp) -> String? {
        let usable = present.filter { isUsable($0, at: now) }
        guard let inUse = current.flatMap({ name in present.first { $0.name == name } }), isUsable(inUse, at: now)
        else {
            // Leave at once: the most preferred usable adapter, else the best of the rest.
            if let best = usable.first { return best.name }
            // Nothing usable: a powered, fit adapter in use is kept (stuck, its ladder retries;
            // both stuck, no flapping between them), else the best of what is present.
            if let current = self.current.flatMap({ name in present.first { $0.name == name } }), current.powered,
                current.fit
            {
                return current.name
            }
            return present.min { fallbackRank($0) < fallbackRank($1) }?.name
        }
        // Return to a more preferred adapter, steady for `returnAfter`, between exchanges.
        guard !exchangeActive,
            let better = usable.first(where: { rank($0.name) < rank(inUse.name) }),
            let since = usableSince[better.name], now - since >= policy.returnAfter
        else { return inUse.name }
        return better.name
    }

    private func isUsable(_ adapter: Adapter, at now: Timestamp) -> Bool {
        adapter.powered && !adapter.blocked && adapter.fit && !isQuarantined(adapter.name, at: now)
    }

    /// Preference: the position in `order`, or the adapter's index.
    private func rank(_ name: String) -> Int {
        if let order = policy.order { return order.firstIndex(of: name) ?? Int.max }
        return Int(name.drop { !$0.isNumber }) ?? Int.max
    }

    /// With nothing usable: fit before unfit, powered before off, not quarantined, then preference.
    private func fallbackRank(_ adapter: Adapter) -> (Int, Int, Int, Int) {
        (
            adapter.fit ? 0 : 1, adapter.powered ? 0 : 1, quarantinedUntil[adapter.name] == nil ? 0 : 1,
            rank(adapter.name)
        )
    }
}
