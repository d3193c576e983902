/// The compact reader id a reader advertises (docs/reader-protocol.md §2). Never zero.
public struct ReaderID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }

    public static func < (lhs: ReaderID, rhs: ReaderID) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Eight upper-case hex digits: the form used on the socket and by `accessctl`.
    public var description: String {
        let hex = String(rawValue, radix: 16, uppercase: true)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }

    /// Parses the eight-hex-digit form (a shorter hex form is accepted too). Hex digits only:
    /// `UInt32(_:radix:)` alone also takes a sign ("+2A01").
    public init?(_ text: String) {
        guard !text.isEmpty, text.utf8.count <= 8,
            text.utf8.allSatisfy({ byte in
                // 0-9, or a-f once ASCII letters are folded to lower case.
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte | 0x20)
            }),
            let value = UInt32(text, radix: 16), value != 0
        else { return nil }
        self.rawValue = value
    }
}

/// A short tag naming the site whose key signs a reader's challenges. Advertised so that a
/// credential holder can tell, before connecting, whether it holds a credential for that site.
public struct SiteTag: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }

    public var description: String {
        let hex = String(rawValue, radix: 16, uppercase: true)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }
}

/// What sort of door hardware a reader is. Raw values are the advertised byte.
public enum ReaderKind: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// A Gallagher-style reader: takes the mobile credential.
    case gallagherStyle = 1
    /// An Aperio-style lock: takes an Aperio credential synced from the site.
    case aperioStyle = 2

    /// The stable, non-localised name used on the wire.
    public var description: String {
        switch self {
        case .gallagherStyle: "gallagher"
        case .aperioStyle: "aperio"
        }
    }
}

/// The capability flags a reader advertises (byte 2 of the service data).
public struct ReaderFlags: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let autoConnectEnabled = ReaderFlags(rawValue: 1 << 0)
    public static let manualConnectEnabled = ReaderFlags(rawValue: 1 << 1)
    public static let secondFactorRequired = ReaderFlags(rawValue: 1 << 2)
    public static let actionsEnabled = ReaderFlags(rawValue: 1 << 3)
    /// A presence advertisement: sent by a reader while a holder is connected to it, from a
    /// second, non-connectable advertising set, so that the holder still hears how near it
    /// is. Its address is not one to connect to (docs/reader-protocol.md §2).
    public static let presence = ReaderFlags(rawValue: 1 << 4)

    /// Bits 5–7 are reserved in protocol version 1 and must be zero.
    public static let defined: ReaderFlags = [
        .autoConnectEnabled, .manualConnectEnabled, .secondFactorRequired, .actionsEnabled,
        .presence,
    ]
}
