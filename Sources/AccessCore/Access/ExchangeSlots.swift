/// Who started an exchange.
public enum ExchangeOrigin: Hashable, Sendable {
    case automatic
    case manual(RequestID)
}

/// A client's request, numbered by the shell (for example the socket's request id).
public struct RequestID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { String(rawValue) }
}

/// What an exchange asks of the reader.
public enum ExchangeOperation: Hashable, Sendable {
    case access
    case enumerateActions
    case performAction(Int8)
}

/// The exchanges running on one adapter, and the link held for one to come
/// (`connect_early`). BlueZ and most controllers handle one LE connection attempt at a time
/// well; more can be allowed by configuration (`[access] connection_limit`).
///
/// A held link counts against the limit: it is opened only into a free slot, and an
/// exchange with another reader that needs the slot takes it, the held link being dropped
/// first (`AccessController`), so the adapter never has more links than the limit.
public struct ExchangeSlots: Hashable, Sendable {
    public var limit: Int
    public private(set) var active: [ReaderID: ExchangeOrigin] = [:]
    /// The reader whose link is held for an exchange to come, if any: the auto-connect
    /// machine's (`AccessController.slots`), never tracked apart.
    public internal(set) var held: ReaderID?

    public init(limit: Int = 1) {
        self.limit = max(1, limit)
    }

    /// Slots for exchanges: a held link gives way to an exchange, so it is not subtracted.
    public var freeCount: Int { max(0, limit - active.count) }
    /// Links in use: exchanges, and the held link unless an exchange runs over it.
    public var linkCount: Int { active.count + (held.map { active[$0] == nil ? 1 : 0 } ?? 0) }
    /// Whether a link may be held now: a slot free of exchanges and of held links.
    public var canHoldLink: Bool { linkCount < limit }
    public func isBusy(_ reader: ReaderID) -> Bool { active[reader] != nil }

    mutating func begin(_ reader: ReaderID, origin: ExchangeOrigin) {
        active[reader] = origin
    }

    @discardableResult
    mutating func end(_ reader: ReaderID) -> ExchangeOrigin? {
        active.removeValue(forKey: reader)
    }
}
