/// A D-Bus value with its type, as read from or written to a message.
///
/// Containers carry their element signatures so that empty arrays and dictionaries can be
/// written with the right type.
public indirect enum DBusValue: Hashable, Sendable, CustomStringConvertible {
    case byte(UInt8)
    case bool(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    case unixFD(Int32)
    case array(elementSignature: String, [DBusValue])
    case dictionary(keySignature: String, valueSignature: String, [DictionaryEntry])
    case variant(DBusValue)
    case structure([DBusValue])

    public struct DictionaryEntry: Hashable, Sendable {
        public var key: DBusValue
        public var value: DBusValue

        public init(_ key: DBusValue, _ value: DBusValue) {
            self.key = key
            self.value = value
        }
    }

    /// The value's D-Bus type signature.
    public var signature: String {
        switch self {
        case .byte: "y"
        case .bool: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case let .array(element, _): "a" + element
        case let .dictionary(key, value, _): "a{" + key + value + "}"
        case .variant: "v"
        case let .structure(members): "(" + members.map(\.signature).joined() + ")"
        }
    }

    public var description: String {
        switch self {
        case let .byte(v): "\(v)"
        case let .bool(v): "\(v)"
        case let .int16(v): "\(v)"
        case let .uint16(v): "\(v)"
        case let .int32(v): "\(v)"
        case let .uint32(v): "\(v)"
        case let .int64(v): "\(v)"
        case let .uint64(v): "\(v)"
        case let .double(v): "\(v)"
        case let .string(v): "\"\(v)\""
        case let .objectPath(v): v
        case let .signature(v): "g\"\(v)\""
        case let .unixFD(v): "fd \(v)"
        case let .array(_, items): "[" + items.map(\.description).joined(separator: ", ") + "]"
        case let .dictionary(_, _, entries): "{" + entries.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        case let .variant(v): "<\(v)>"
        case let .structure(members): "(" + members.map(\.description).joined(separator: ", ") + ")"
        }
    }

    // MARK: Reading

    /// The value inside any number of variants.
    public var unwrapped: DBusValue {
        if case let .variant(inner) = self { return inner.unwrapped }
        return self
    }

    public var string: String? {
        switch unwrapped {
        case let .string(v), let .objectPath(v): v
        default: nil
        }
    }

    public var bool: Bool? {
        if case let .bool(v) = unwrapped { return v }
        return nil
    }

    /// Any integer type, widened.
    public var integer: Int? {
        switch unwrapped {
        case let .byte(v): Int(v)
        case let .int16(v): Int(v)
        case let .uint16(v): Int(v)
        case let .int32(v): Int(v)
        case let .uint32(v): Int(v)
        case let .int64(v): Int(v)
        case let .uint64(v): Int(exactly: v)
        default: nil
        }
    }

    /// `ay`.
    public var bytes: [UInt8]? {
        guard case let .array(element, items) = unwrapped, element == "y" else { return nil }
        var result: [UInt8] = []
        result.reserveCapacity(items.count)
        for item in items {
            guard case let .byte(v) = item else { return nil }
            result.append(v)
        }
        return result
    }

    /// `as` or `ao`.
    public var strings: [String]? {
        guard case let .array(_, items) = unwrapped else { return nil }
        let values = items.compactMap(\.string)
        return values.count == items.count ? values : nil
    }

    /// A dictionary with string or object-path keys (`a{sv}`, `a{oa{sa{sv}}}`, ...).
    public var stringKeyed: [String: DBusValue]? {
        guard case let .dictionary(_, _, entries) = unwrapped else { return nil }
        var result: [String: DBusValue] = [:]
        for entry in entries {
            guard let key = entry.key.string else { return nil }
            result[key] = entry.value
        }
        return result
    }

    /// A dictionary with integer keys (`a{qv}`: BlueZ's ManufacturerData).
    public var integerKeyed: [Int: DBusValue]? {
        guard case let .dictionary(_, _, entries) = unwrapped else { return nil }
        var result: [Int: DBusValue] = [:]
        for entry in entries {
            guard let key = entry.key.integer else { return nil }
            result[key] = entry.value
        }
        return result
    }

    // MARK: Building

    /// `a{sv}` from string keys, in key order (so messages are reproducible).
    public static func properties(_ values: [String: DBusValue]) -> DBusValue {
        .dictionary(keySignature: "s", valueSignature: "v",
                    values.sorted { $0.key < $1.key }.map { DictionaryEntry(.string($0.key), .variant($0.value)) })
    }

    /// `ay`.
    public static func bytes(_ values: [UInt8]) -> DBusValue {
        .array(elementSignature: "y", values.map { .byte($0) })
    }

    /// `as`.
    public static func strings(_ values: [String]) -> DBusValue {
        .array(elementSignature: "s", values.map { .string($0) })
    }
}
