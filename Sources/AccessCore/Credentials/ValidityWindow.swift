/// When an item may be used (docs/site-api.md, items' `validFrom` and `validUntil`, Unix
/// seconds): from `from` on, before `until`; an open end is unbounded. One rule for the holder
/// (an item it presents) and the lock (an Aperio record a provisioning page carries), so the
/// two can never disagree on the second an item ends.
public struct ValidityWindow: Hashable, Sendable {
    public var from: Double?
    public var until: Double?

    public init(from: Double?, until: Double?) {
        self.from = from
        self.until = until
    }

    public func contains(_ time: Double) -> Bool {
        (from.map { time >= $0 } ?? true) && (until.map { time < $0 } ?? true)
    }
}
