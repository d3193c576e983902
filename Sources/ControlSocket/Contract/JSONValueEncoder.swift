import AccessJSON

/// Encodes a contract value straight into a `JSONValue`, the form the socket writes. Written
/// here because going through `JSONEncoder` and back (`Data`, then `JSONValue`'s decoder,
/// which tries each JSON type in turn) cost a third of `status.get`'s throughput (27,000
/// answers/s before the typed contract, 8,200 with the round trip: docs/performance.md).
/// Optionals that are nil are left out, as `JSONEncoder` does.
struct JSONValueEncoder {
    /// The values the generic `encode` would otherwise take through `encode(to:)`, a node
    /// and an existential container each: a `JSONValue` inside a contract value (an item's
    /// `data`), and the scalars and string lists answers are made of, which arrive here
    /// generically as an array's elements or an optional's payload. Metatype comparisons,
    /// not dynamic casts (`as? any BinaryInteger` here cost a third of `status.get`'s
    /// throughput); the bit casts are between identical types.
    static func primitive<T>(_ value: T) -> JSONValue? {
        if T.self == JSONValue.self { return unsafeBitCast(value, to: JSONValue.self) }
        if T.self == String.self { return .string(unsafeBitCast(value, to: String.self)) }
        if T.self == Int.self { return .int(Int64(unsafeBitCast(value, to: Int.self))) }
        if T.self == Int64.self { return .int(unsafeBitCast(value, to: Int64.self)) }
        if T.self == Bool.self { return .bool(unsafeBitCast(value, to: Bool.self)) }
        if T.self == Double.self { return .double(unsafeBitCast(value, to: Double.self)) }
        if T.self == [String].self { return .array(unsafeBitCast(value, to: [String].self).map(JSONValue.string)) }
        // Spelled out: JSONValue takes `nil` as a literal, so a bare `nil` here became `.null`.
        return Optional<JSONValue>.none
    }

    static func encode<T: Encodable>(_ value: T) throws -> JSONValue {
        let root = Node()
        try value.encode(to: NodeEncoder(node: root, codingPath: []))
        return root.value
    }

    /// What has been encoded at one place of the tree so far. Scalars are stored as
    /// values; only nested objects and arrays get a node of their own, and an object's
    /// scalar members are kept in the dictionary it ends as (no copy when it has no nested
    /// member, as a status answer has none).
    final class Node {
        enum Kind { case empty, value, object, array }
        enum Child {
            case value(JSONValue)
            case node(Node)

            var json: JSONValue {
                switch self {
                case .value(let value): value
                case .node(let node): node.value
                }
            }
        }

        var kind = Kind.empty
        private var scalar = JSONValue.null
        private var members: [String: JSONValue] = [:]
        private var nestedMembers: [String: Node] = [:]
        private var elements: [Child] = []

        var value: JSONValue {
            switch kind {
            case .empty: return .null
            case .value: return scalar
            case .object:
                guard !nestedMembers.isEmpty else { return .object(members) }
                var all = members
                for (key, node) in nestedMembers { all[key] = node.value }
                return .object(all)
            case .array: return .array(elements.map(\.json))
            }
        }

        func set(_ value: JSONValue) {
            kind = .value
            scalar = value
        }

        func set(_ value: JSONValue, member key: String) {
            kind = .object
            if !nestedMembers.isEmpty { nestedMembers[key] = nil }
            members[key] = value
        }

        func member(_ key: String) -> Node {
            kind = .object
            if let node = nestedMembers[key] { return node }
            let node = Node()
            members[key] = nil
            nestedMembers[key] = node
            return node
        }

        func makeObject() {
            if kind != .object {
                kind = .object
                members.reserveCapacity(16)
            }
        }

        func append(_ value: JSONValue) {
            kind = .array
            elements.append(.value(value))
        }

        func append() -> Node {
            kind = .array
            let node = Node()
            elements.append(.node(node))
            return node
        }

        func makeArray() { if kind != .array { kind = .array } }

        var count: Int { elements.count }
    }

    struct NodeEncoder: Encoder {
        let node: Node
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            node.makeObject()
            return KeyedEncodingContainer(Keyed(node: node, codingPath: codingPath))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            node.makeArray()
            return Unkeyed(node: node, codingPath: codingPath)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer {
            Single(node: node, codingPath: codingPath)
        }
    }

    struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let node: Node
        let codingPath: [any CodingKey]

        private func set(_ value: JSONValue, _ key: Key) { node.set(value, member: key.stringValue) }

        mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
        mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
        mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
        mutating func encode(_ value: Double, forKey key: Key) throws { set(.double(value), key) }
        mutating func encode(_ value: Int, forKey key: Key) throws { set(.int(Int64(value)), key) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { set(.int(value), key) }
        mutating func encode(_ value: Float, forKey key: Key) throws { set(.double(Double(value)), key) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { set(.int(Int64(value)), key) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { set(.int(Int64(value)), key) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { set(.int(Int64(value)), key) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { set(.int(Int64(clamping: value)), key) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.int(Int64(value)), key) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.int(Int64(value)), key) }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.int(Int64(value)), key) }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { set(.int(Int64(clamping: value)), key) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            if let json = JSONValueEncoder.primitive(value) {
                set(json, key)
                return
            }
            try value.encode(to: NodeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key]))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
            -> KeyedEncodingContainer<NestedKey>
        {
            let child = node.member(key.stringValue)
            child.makeObject()
            return KeyedEncodingContainer(Keyed<NestedKey>(node: child, codingPath: codingPath + [key]))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            let child = node.member(key.stringValue)
            child.makeArray()
            return Unkeyed(node: child, codingPath: codingPath + [key])
        }

        mutating func superEncoder() -> any Encoder { NodeEncoder(node: node.member("super"), codingPath: codingPath) }
        mutating func superEncoder(forKey key: Key) -> any Encoder {
            NodeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key])
        }
    }

    struct Unkeyed: UnkeyedEncodingContainer {
        let node: Node
        let codingPath: [any CodingKey]
        var count: Int { node.count }

        mutating func encodeNil() throws { node.append(.null) }
        mutating func encode(_ value: Bool) throws { node.append(.bool(value)) }
        mutating func encode(_ value: String) throws { node.append(.string(value)) }
        mutating func encode(_ value: Double) throws { node.append(.double(value)) }
        mutating func encode(_ value: Int) throws { node.append(.int(Int64(value))) }
        mutating func encode(_ value: Int64) throws { node.append(.int(value)) }
        mutating func encode(_ value: Float) throws { node.append(.double(Double(value))) }
        mutating func encode(_ value: Int8) throws { node.append(.int(Int64(value))) }
        mutating func encode(_ value: Int16) throws { node.append(.int(Int64(value))) }
        mutating func encode(_ value: Int32) throws { node.append(.int(Int64(value))) }
        mutating func encode(_ value: UInt) throws { node.append(.int(Int64(clamping: value))) }
        mutating func encode(_ value: UInt8) throws { node.append(.int(Int64(value))) }
        mutating func encode(_ value: UInt16) throws { node.append(.int(Int64(value))) }
        mutating func encode(_ value: UInt32) throws { node.append(.int(Int64(value))) }
        mutating func encode(_ value: UInt64) throws { node.append(.int(Int64(clamping: value))) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            if let json = JSONValueEncoder.primitive(value) {
                node.append(json)
                return
            }
            try value.encode(to: NodeEncoder(node: node.append(), codingPath: codingPath))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
            -> KeyedEncodingContainer<NestedKey>
        {
            let child = node.append()
            child.makeObject()
            return KeyedEncodingContainer(Keyed<NestedKey>(node: child, codingPath: codingPath))
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let child = node.append()
            child.makeArray()
            return Unkeyed(node: child, codingPath: codingPath)
        }

        mutating func superEncoder() -> any Encoder { NodeEncoder(node: node.append(), codingPath: codingPath) }
    }

    struct Single: SingleValueEncodingContainer {
        let node: Node
        let codingPath: [any CodingKey]

        mutating func encodeNil() throws { node.set(.null) }
        mutating func encode(_ value: Bool) throws { node.set(.bool(value)) }
        mutating func encode(_ value: String) throws { node.set(.string(value)) }
        mutating func encode(_ value: Double) throws { node.set(.double(value)) }
        mutating func encode(_ value: Int) throws { node.set(.int(Int64(value))) }
        mutating func encode(_ value: Int64) throws { node.set(.int(value)) }
        mutating func encode(_ value: Float) throws { node.set(.double(Double(value))) }
        mutating func encode(_ value: Int8) throws { node.set(.int(Int64(value))) }
        mutating func encode(_ value: Int16) throws { node.set(.int(Int64(value))) }
        mutating func encode(_ value: Int32) throws { node.set(.int(Int64(value))) }
        mutating func encode(_ value: UInt) throws { node.set(.int(Int64(clamping: value))) }
        mutating func encode(_ value: UInt8) throws { node.set(.int(Int64(value))) }
        mutating func encode(_ value: UInt16) throws { node.set(.int(Int64(value))) }
        mutating func encode(_ value: UInt32) throws { node.set(.int(Int64(value))) }
        mutating func encode(_ value: UInt64) throws { node.set(.int(Int64(clamping: value))) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            if let json = JSONValueEncoder.primitive(value) {
                node.set(json)
                return
            }
            try value.encode(to: NodeEncoder(node: node, codingPath: codingPath))
        }
    }
}
