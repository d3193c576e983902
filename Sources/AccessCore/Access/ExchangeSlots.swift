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

/// The exchanges running on one adapter. BlueZ and most controllers handle one LE
/// connection attempt at a time well; more can be allowed by configuration.
public struct ExchangeSlots: Hashable, Sendable {
    public var limit: Int
    public private(set) var active: [ReaderID: ExchangeOrigin] = [:]

    public init(limit: Int = 1) {
        self.limit = max(1, limit)
    }

    public var freeCount: Int { max(0, limit - active.count) }
    public func isBusy(_ reader: ReaderID) -> Bool { active[reader] != nil }

    mutating func begin(_ reader: ReaderID, origin: ExchangeOrigin) {
        active[reader] = origin
    }

    @discardableResult
    mutating func end(_ reader: ReaderID) -> ExchangeOrigin? {
        active.removeValue(forKey: reader)
    }
}
