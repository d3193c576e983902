/// The part of TOML accessd.toml and readersim's reader files use, parsed by hand: `[section]`
/// and `[section.table]` headers, `key = value`
/// lines and comments; values are strings ("basic" and 'literal'), booleans, integers,
/// floats and one-line arrays of those.
///
/// Why not TOMLKit: its parser (toml++) aborts the process on some malformed input (an
/// assertion in `parse_key`, found by this project's fuzz test), and a daemon must refuse a
/// bad file, not crash on it. This parser refuses everything outside its subset with the
/// line and the reason, and is fuzzed (ConfigurationTests).
public enum ConfigurationSyntax {
    public enum Value: Hashable, Sendable {
        case string(String)
        case bool(Bool)
        case integer(Int)
        case float(Double)
        case array([Value])
    }

    public struct Entry: Hashable, Sendable {
        public var value: Value
        public var line: Int
    }

    public struct Document: Sendable {
        /// Section → key → value. Keys before any header belong to section "".
        public var sections: [String: [String: Entry]] = [:]
        public var sectionLines: [String: Int] = [:]
    }

    public struct Failure: Error {
        public var line: Int
        public var reason: String
    }

    /// A file's bytes as text. TOML files are UTF-8; a byte that is not is refused with its
    /// line, as any other mistake is, instead of "cannot read" with no line (issue #17).
    public static func text(of bytes: [UInt8]) throws(Failure) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        // The longest valid prefix ends where the first bad byte is (the slow path, taken only for a bad file).
        var line = 1
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        var offset = 0
        decode: while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar):
                offset += UTF8.width(scalar)
                if scalar == "\n" { line += 1 }
            case .emptyInput, .error:
                break decode
            }
        }
        throw Failure(line: line, reason: "not UTF-8 (byte \(offset + 1) of the file)")
    }

    public static func parse(_ text: String) throws(Failure) -> Document {
        var document = Document()
        var section = ""
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        for (index, raw) in lines.enumerated() {
            let number = index + 1
            var scanner = Scanner(Array(raw.utf8), line: number)
            scanner.skipSpaces()
            if scanner.atEndOrComment { continue }
            if scanner.peek == UInt8(ascii: "[") {
                scanner.advance()
                if scanner.peek == UInt8(ascii: "[") {
                    throw Failure(line: number, reason: "arrays of tables are not supported")
                }
                scanner.skipSpaces()
                var name = try scanner.bareKey()
                scanner.skipSpaces()
                // A dotted header names a table within a section (`[reader.00002A01]`).
                while scanner.peek == UInt8(ascii: ".") {
                    scanner.advance()
                    scanner.skipSpaces()
                    name += "." + (try scanner.bareKey())
                    scanner.skipSpaces()
                }
                try scanner.expect(UInt8(ascii: "]"), "expected ] after the section name")
                scanner.skipSpaces()
                guard scanner.atEndOrComment else {
                    throw Failure(line: number, reason: "unexpected text after [\(name)]")
                }
                if let first = document.sectionLines[name] {
                    throw Failure(line: number, reason: "section [\(name)] appears twice (first on line \(first))")
                }
                document.sectionLines[name] = number
                document.sections[name] = document.sections[name] ?? [:]
                section = name
                continue
            }
            let key = try scanner.bareKey()
            scanner.skipSpaces()
            if scanner.peek == UInt8(ascii: ".") {
                throw Failure(line: number, reason: "dotted keys are not supported")
            }
            try scanner.expect(UInt8(ascii: "="), "expected = after \(key)")
            scanner.skipSpaces()
            let value = try scanner.value()
            scanner.skipSpaces()
            guard scanner.atEndOrComment else {
                throw Failure(line: number, reason: "unexpected text after the value of \(key)")
            }
            if let previous = document.sections[section]?[key] {
                throw Failure(line: number, reason: "\(key) is set twice (first on line \(previous.line))")
            }
            document.sections[section, default: [:]][key] = Entry(value: value, line: number)
        }
        return document
    }

    private struct Scanner {
        let bytes: [UInt8]
        let line: Int
        var position = 0

        init(_ bytes: [UInt8], line: Int) {
            // A CR before the newline (a file edited on Windows) is not part of the line.
            self.bytes = bytes.last == 0x0D ? Array(bytes.dropLast()) : bytes
            self.line = line
        }

        var peek: UInt8? { position < bytes.count ? bytes[position] : nil }
        var atEndOrComment: Bool { peek == nil || peek == UInt8(ascii: "#") }

        mutating func advance() { position += 1 }

        mutating func skipSpaces() {
            while let byte = peek, byte == 0x20 || byte == 0x09 { advance() }
        }

        func fail(_ reason: String) -> Failure { Failure(line: line, reason: reason) }

        mutating func expect(_ byte: UInt8, _ reason: String) throws(Failure) {
            guard peek == byte else { throw fail(reason) }
            advance()
        }

        mutating func bareKey() throws(Failure) -> String {
            let start = position
            while let byte = peek, Self.isBareKeyCharacter(byte) { advance() }
            guard position > start else {
                if peek == UInt8(ascii: "\"") || peek == UInt8(ascii: "'") {
                    throw fail("quoted keys are not supported")
                }
                throw fail("expected a key (letters, digits, _ and -)")
            }
            return String(decoding: bytes[start..<position], as: UTF8.self)
        }

        static func isBareKeyCharacter(_ byte: UInt8) -> Bool {
            (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }

        mutating func value(depth: Int = 0) throws(Failure) -> Value {
            guard let byte = peek else { throw fail("expected a value") }
            switch byte {
            case UInt8(ascii: "\""): return .string(try basicString())
            case UInt8(ascii: "'"): return .string(try literalString())
            case UInt8(ascii: "["):
                guard depth == 0 else { throw fail("nested arrays are not supported") }
                advance()
                var items: [Value] = []
                while true {
                    skipSpaces()
                    if peek == UInt8(ascii: "]") {
                        advance()
                        return .array(items)
                    }
                    if peek == nil || peek == UInt8(ascii: "#") {
                        throw fail("arrays must be closed on the line they start")
                    }
                    items.append(try value(depth: depth + 1))
                    skipSpaces()
                    if peek == UInt8(ascii: ",") {
                        advance()
                    } else if peek == nil || peek == UInt8(ascii: "#") {
                        throw fail("arrays must be closed on the line they start")
                    } else if peek != UInt8(ascii: "]") {
                        throw fail("expected , or ] in the array")
                    }
                }
            case UInt8(ascii: "{"):
                throw fail("inline tables are not supported")
            default:
                let start = position
                while let next = peek, next != 0x20, next != 0x09, next != UInt8(ascii: ","), next != UInt8(ascii: "]"),
                    next != UInt8(ascii: "#")
                {
                    advance()
                }
                let word = String(decoding: bytes[start..<position], as: UTF8.self)
                if word == "true" { return .bool(true) }
                if word == "false" { return .bool(false) }
                let digits = String(word.filter { $0 != "_" })
                if let integer = Int(digits), !word.hasPrefix("_"), !word.hasSuffix("_") { return .integer(integer) }
                if digits.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }), let number = Double(digits),
                    number.isFinite,
                    digits.first != ".", digits.last != "."
                {
                    return .float(number)
                }
                throw fail("\(word.isEmpty ? "nothing" : "'\(word)'") is not a value (strings need quotes)")
            }
        }

        mutating func literalString() throws(Failure) -> String {
            advance()
            let start = position
            while let byte = peek, byte != UInt8(ascii: "'") {
                guard byte >= 0x20 || byte == 0x09 else { throw fail("control character in a string") }
                advance()
            }
            guard peek != nil else { throw fail("unterminated string") }
            let text = String(decoding: bytes[start..<position], as: UTF8.self)
            advance()
            return text
        }

        mutating func basicString() throws(Failure) -> String {
            advance()
            var result: [UInt8] = []
            while let byte = peek {
                advance()
                switch byte {
                case UInt8(ascii: "\""):
                    guard let text = String(validating: result, as: UTF8.self) else {
                        throw fail("string is not UTF-8")
                    }
                    return text
                case UInt8(ascii: "\\"):
                    guard let escaped = peek else { throw fail("unterminated string") }
                    advance()
                    switch escaped {
                    case UInt8(ascii: "\""): result.append(0x22)
                    case UInt8(ascii: "\\"): result.append(0x5C)
                    case UInt8(ascii: "n"): result.append(0x0A)
                    case UInt8(ascii: "t"): result.append(0x09)
                    case UInt8(ascii: "r"): result.append(0x0D)
                    case UInt8(ascii: "u"):
                        guard position + 4 <= bytes.count,
                            let code = UInt32(
                                String(decoding: bytes[position..<position + 4], as: UTF8.self), radix: 16),
                            let scalar = Unicode.Scalar(code), code != 0
                        else { throw fail("bad \\u escape") }
                        position += 4
                        result += Array(String(Character(scalar)).utf8)
                    default:
                        throw fail("unknown escape \\\(Character(Unicode.Scalar(escaped)))")
                    }
                default:
                    guard byte >= 0x20 || byte == 0x09 else { throw fail("control character in a string") }
                    result.append(byte)
                }
            }
            throw fail("unterminated string")
        }
    }
}
