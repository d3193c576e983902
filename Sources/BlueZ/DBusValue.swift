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
        case .array(let element, _): "a" + element
        case .dictionary(let key, let value, _): "a{" + key + value + "}"
        case .variant: "v"
        case .structure(let members): "(" + members.map(\.signature).joined() + ")"
        }
    }

    public var description: String {
        switch self {
        case .byte(let v): "\(v)"
        case .bool(let v): "\(v)"
        case .int16(let v): "\(v)"
        case .uint16(let v): "\(v)"
        case .int32(let v): "\(v)"
        case .uint32(let v): "\(v)"
        case .int64(let v): "\(v)"
        case .uint64(let v): "\(v)"
        case .double(let v): "\(v)"
        case .string(let v): "\"\(v)\""
        case .objectPath(let v): v
        case .signature(let v): "g\"\(v)\""
        case .unixFD(let v): "fd \(v)"
        case .array(_, let items): "[" + items.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(_, _, let entries):
            "{" + entries.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        case .variant(let v): "<\(v)>"
        case .structure(let members): "(" + members.map(\.description).joined(separator: ", ") + ")"
        }
    }

    // MARK: Reading

    /// The value inside any number of variants.
    public var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    public var string: String? {
        switch unwrapped {
        case .string(let v), .objectPath(let v): v
        default: nil
        }
    }

    public var bool: Bool? {
        if case .bool(let v) = unwrapped { return v }
        return nil
    }

    /// Any integer type, widened.
    public var integer: Int? {
        switch unwrapped {
        case .byte(let v): Int(v)
        case .int16(let v): Int(v)
        case .uint16(let v): Int(v)
        case .int32(let v): Int(v)
        case .uint32(let v): Int(v)
        case .int64(let v): Int(v)
        case .uint64(let v): Int(exactly: v)
        default: nil
        }
    }

    /// `ay`.
    public var bytes: [UInt8]? {
        guard case .array(let element, let items) = unwrapped, element == "y" else { return nil }
        var result: [UInt8] = []
        result.reserveCapacity(items.count)
        for item in items {
            guard case .byte(let v) = item else { return nil }
            result.append(v)
        }
        return result
    }

    /// `as` or `ao`.
    public var strings: [String]? {
        guard case .array(_, let items) = unwrapped else { return nil }
        let values = items.compactMap(\.string)
        return values.count == items.count ? values : nil
    }

    /// A dictionary with string or object-path keys (`a{sv}`, `a{oa{sa{sv}}}`, ...).
    public var stringKeyed: [String: DBusValue]? {
        guard case .dictionary(_, _, let entries) = unwrapped else { return nil }
        var result: [String: DBusValue] = [:]
        for entry in entries {
            guard let key = entry.key.string else { return nil }
            result[key] = entry.value
        }
        return result
    }

    /// A dictionary with integer keys (`a{qv}`: BlueZ's ManufacturerData).
    public var integerKeyed: [Int: DBusValue]? {
        guard case .dictionary(_, _, let entries) = unwrapped else { return nil }
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
        .dictionary(
            keySignature: "s", valueSignature: "v",
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
