extension StringProtocol {
    /// The text for a URL's query: every byte of its UTF-8 but ASCII letters and digits as
    /// `%XX`. Written here because `addingPercentEncoding(withAllowedCharacters:)` is
    /// Foundation's, not FoundationEssentials' (issue #37).
    public func percentEncodedForQuery() -> String {
        var encoded = ""
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                encoded += "%" + [byte].hexString.uppercased()
            }
        }
        return encoded
    }
}
