/// How deep a JSON text nests, measured on its bytes before any parsing: Foundation's
/// decoder, through `JSONValue`'s Codable, spends about 2 ms per level on deep input (a
/// 3 KB line 500 levels deep took 1.0 s), so deep text is refused by this scan, which costs
/// about a microsecond per kilobyte and never allocates. Strings are skipped, escapes included.
public enum JSONNesting {
    /// The deepest any text outside tests needs: accessd's own answers nest 4 deep, site
    /// items' `data` at most 16 (docs/site-api.md).
    public static let limit = 32

    /// Whether `bytes` opens more than `limit` arrays or objects inside each other.
    public static func exceeds<Bytes: Sequence>(_ limit: Int, in bytes: Bytes) -> Bool where Bytes.Element == UInt8 {
        var depth = 0
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > limit { return true }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return false
    }
}

/// Text refused before parsing because it nests deeper than `JSONNesting.limit`.
public struct JSONTooDeep: Error, Hashable, Sendable, CustomStringConvertible {
    public var limit: Int
    public var description: String { "nested deeper than \(limit) levels" }
}
