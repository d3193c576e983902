import CBlueZ
import CDBus

/// Writes `DBusValue`s into a libdbus message and reads them back, with libdbus's iterator
/// API. Refuses (rather than handing libdbus) anything libdbus would reject with a warning:
/// invalid object paths, signatures and strings with NUL bytes.
enum DBusMessageCodec {
    static func append(_ values: [DBusValue], to message: OpaquePointer) throws(DBusError) {
        var iterator = DBusMessageIter()
        dbus_message_iter_init_append(message, &iterator)
        for value in values {
            try append(value, to: &iterator)
        }
    }

    private static func append(_ value: DBusValue, to iterator: inout DBusMessageIter) throws(DBusError) {
        var ok: dbus_bool_t = 1
        switch value {
        case .byte(var v): ok = dbus_message_iter_append_basic(&iterator, CBZ_TYPE_BYTE, &v)
        case .bool(let b):
            var v: dbus_bool_t = b ? 1 : 0
            ok = dbus_message_iter_append_basic(&iterator, CBZ_TYPE_BOOLEAN, &v)
        case .int16(var v): ok = dbus_message_iter_append_basic(&iterator, CBZ_TYPE_INT16, &v)
        case .uint16(var v): ok = dbus_message_iter_append_basic(&iterator, CBZ_TYPE_UINT16, &v)
        case .int32(var v): ok = dbus_message_iter_append_basic(&iterator, CBZ_TYPE_INT32, &v)
        case .uint32(var v): ok = dbus_message_iter_append_basic(&iterator, CBZ_TYPE_UINT32, &v)
        case .int64(var v): ok = dbus_message_iter_append_basic(&iterator, CBZ_TYPE_INT64, &v)
        case .uint64(var v): ok = dbus_message_iter_append_basic(&iterator, CBZ_TYPE_UINT64, &v)
        case .double(var v): ok = dbus_message_iter_append_basic(&iterator, CBZ_TYPE_DOUBLE, &v)
        case .unixFD(var v): ok = dbus_message_iter_append_basic(&iterator, CBZ_TYPE_UNIX_FD, &v)
        case .string(let text):
            guard !text.utf8.contains(0) else { throw .invalidArgument("string contains NUL") }
            ok = appendText(text, type: CBZ_TYPE_STRING, to: &iterator)
        case .objectPath(let path):
            guard isValidObjectPath(path) else { throw .invalidArgument("invalid object path \(path)") }
            ok = appendText(path, type: CBZ_TYPE_OBJECT_PATH, to: &iterator)
        case .signature(let signature):
            guard isValidSignature(signature) else { throw .invalidArgument("invalid signature \(signature)") }
            ok = appendText(signature, type: CBZ_TYPE_SIGNATURE, to: &iterator)
        case .array(let element, let items):
            guard isValidSignature(element), items.allSatisfy({ $0.signature == element }) else {
                throw .invalidArgument("array elements do not match \(element)")
            }
            try container(CBZ_TYPE_ARRAY, signature: element, in: &iterator) { sub throws(DBusError) in
                if element == "y", let bytes = value.bytes {
                    try appendFixed(bytes, to: &sub)
                } else {
                    for item in items { try append(item, to: &sub) }
                }
            }
        case .dictionary(let key, let valueSignature, let entries):
            let entrySignature = "{" + key + valueSignature + "}"
            guard isValidSignature("a" + entrySignature),
                entries.allSatisfy({ $0.key.signature == key && $0.value.signature == valueSignature })
            else { throw .invalidArgument("dictionary entries do not match \(entrySignature)") }
            try container(CBZ_TYPE_ARRAY, signature: entrySignature, in: &iterator) { sub throws(DBusError) in
                for entry in entries {
                    try container(CBZ_TYPE_DICT_ENTRY, signature: nil, in: &sub) { pair throws(DBusError) in
                        try append(entry.key, to: &pair)
                        try append(entry.value, to: &pair)
                    }
                }
            }
        case .variant(let inner):
            try container(CBZ_TYPE_VARIANT, signature: inner.signature, in: &iterator) { sub throws(DBusError) in
                try append(inner, to: &sub)
            }
        case .structure(let members):
            guard !members.isEmpty else { throw .invalidArgument("empty structure") }
            try container(CBZ_TYPE_STRUCT, signature: nil, in: &iterator) { sub throws(DBusError) in
                for member in members { try append(member, to: &sub) }
            }
        }
        guard ok != 0 else { throw .outOfMemory }
    }

    private static func appendText(_ text: String, type: Int32, to iterator: inout DBusMessageIter) -> dbus_bool_t {
        text.withCString { pointer in
            var pointer: UnsafePointer<CChar>? = pointer
            return dbus_message_iter_append_basic(&iterator, type, &pointer)
        }
    }

    private static func appendFixed(_ bytes: [UInt8], to iterator: inout DBusMessageIter) throws(DBusError) {
        let ok = bytes.withUnsafeBufferPointer { buffer in
            var base: UnsafePointer<UInt8>? = buffer.baseAddress ?? UnsafePointer(bitPattern: 1)
            return dbus_message_iter_append_fixed_array(&iterator, CBZ_TYPE_BYTE, &base, Int32(buffer.count))
        }
        guard ok != 0 else { throw .outOfMemory }
    }

    private static func container(
        _ type: Int32, signature: String?, in iterator: inout DBusMessageIter,
        _ body: (inout DBusMessageIter) throws(DBusError) -> Void
    ) throws(DBusError) {
        var sub = DBusMessageIter()
        let opened: dbus_bool_t
        if let signature {
            opened = signature.withCString { dbus_message_iter_open_container(&iterator, type, $0, &sub) }
        } else {
            opened = dbus_message_iter_open_container(&iterator, type, nil, &sub)
        }
        guard opened != 0 else { throw .outOfMemory }
        do {
            try body(&sub)
        } catch {
            dbus_message_iter_abandon_container(&iterator, &sub)
            throw error
        }
        guard dbus_message_iter_close_container(&iterator, &sub) != 0 else { throw .outOfMemory }
    }

    static func isValidObjectPath(_ path: String) -> Bool {
        !path.utf8.contains(0) && path.withCString { dbus_validate_path($0, nil) } != 0
    }

    static func isValidSignature(_ signature: String) -> Bool {
        !signature.utf8.contains(0) && signature.withCString { dbus_signature_validate($0, nil) } != 0
    }

    // MARK: Reading

    /// Every argument of a message.
    static func arguments(of message: OpaquePointer) -> [DBusValue] {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(message, &iterator) != 0 else { return [] }
        var values: [DBusValue] = []
        repeat {
            guard let value = read(&iterator) else { break }
            values.append(value)
        } while dbus_message_iter_next(&iterator) != 0
        return values
    }

    private static func read(_ iterator: inout DBusMessageIter) -> DBusValue? {
        let type = dbus_message_iter_get_arg_type(&iterator)
        switch type {
        case CBZ_TYPE_BYTE: return .byte(basic(&iterator, UInt8(0)))
        case CBZ_TYPE_BOOLEAN: return .bool(basic(&iterator, dbus_bool_t(0)) != 0)
        case CBZ_TYPE_INT16: return .int16(basic(&iterator, Int16(0)))
        case CBZ_TYPE_UINT16: return .uint16(basic(&iterator, UInt16(0)))
        case CBZ_TYPE_INT32: return .int32(basic(&iterator, Int32(0)))
        case CBZ_TYPE_UINT32: return .uint32(basic(&iterator, UInt32(0)))
        case CBZ_TYPE_INT64: return .int64(basic(&iterator, Int64(0)))
        case CBZ_TYPE_UINT64: return .uint64(basic(&iterator, UInt64(0)))
        case CBZ_TYPE_DOUBLE: return .double(basic(&iterator, Double(0)))
        case CBZ_TYPE_UNIX_FD: return .unixFD(basic(&iterator, Int32(-1)))
        case CBZ_TYPE_STRING: return .string(text(&iterator))
        case CBZ_TYPE_OBJECT_PATH: return .objectPath(text(&iterator))
        case CBZ_TYPE_SIGNATURE: return .signature(text(&iterator))
        case CBZ_TYPE_VARIANT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            return read(&sub).map { .variant($0) }
        case CBZ_TYPE_STRUCT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            var members: [DBusValue] = []
            repeat {
                guard let member = read(&sub) else { break }
                members.append(member)
            } while dbus_message_iter_next(&sub) != 0
            return .structure(members)
        case CBZ_TYPE_ARRAY:
            return readArray(&iterator)
        default:
            return nil
        }
    }

    private static func readArray(_ iterator: inout DBusMessageIter) -> DBusValue? {
        // The signature of the array's element type, e.g. "y", "{sv}", "(oa{sv})".
        let full = signature(of: &iterator)
        let element = String(full.dropFirst())
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iterator, &sub)
        if element == "y" {
            var base: UnsafePointer<UInt8>?
            var count: Int32 = 0
            withUnsafeMutablePointer(to: &base) { dbus_message_iter_get_fixed_array(&sub, $0, &count) }
            let bytes = base.map { Array(UnsafeBufferPointer(start: $0, count: Int(count))) } ?? []
            return .bytes(bytes)
        }
        if element.hasPrefix("{") {
            let inner = element.dropFirst().dropLast()
            let keySignature = String(inner.prefix(1))
            let valueSignature = String(inner.dropFirst())
            var entries: [DBusValue.DictionaryEntry] = []
            while dbus_message_iter_get_arg_type(&sub) == CBZ_TYPE_DICT_ENTRY {
                var pair = DBusMessageIter()
                dbus_message_iter_recurse(&sub, &pair)
                guard let key = read(&pair), dbus_message_iter_next(&pair) != 0, let value = read(&pair) else {
                    return nil
                }
                entries.append(.init(key, value))
                dbus_message_iter_next(&sub)
            }
            return .dictionary(keySignature: keySignature, valueSignature: valueSignature, entries)
        }
        var items: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&sub) != CBZ_TYPE_INVALID {
            guard let item = read(&sub) else { return nil }
            items.append(item)
            dbus_message_iter_next(&sub)
        }
        return .array(elementSignature: element, items)
    }

    private static func basic<T: BitwiseCopyable>(_ iterator: inout DBusMessageIter, _ initial: T) -> T {
        var value = initial
        dbus_message_iter_get_basic(&iterator, &value)
        return value
    }

    /// Strings point into the message: copied at once.
    private static func text(_ iterator: inout DBusMessageIter) -> String {
        var pointer: UnsafePointer<CChar>?
        dbus_message_iter_get_basic(&iterator, &pointer)
        return pointer.map { String(cString: $0) } ?? ""
    }

    private static func signature(of iterator: inout DBusMessageIter) -> String {
        guard let raw = dbus_message_iter_get_signature(&iterator) else { return "" }
        defer { dbus_free(raw) }
        return String(cString: raw)
    }
}
