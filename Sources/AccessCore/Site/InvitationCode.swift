/// An invitation code (docs/site-api.md §2): 16 characters of Crockford's base32, 80 bits.
/// Typed codes are forgiving (case, dashes, spaces); the canonical form is upper case
/// without dashes.
public struct InvitationCode: Hashable, Sendable, CustomStringConvertible {
    public static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
    public static let length = 16

    /// Upper case, no dashes: what goes into the URL.
    public let canonical: String

    /// Read as ASCII bytes: upper-casing a Character can give several ("ß" is "SS", a
    /// combining mark after another character becomes a letter of its own), and forming a
    /// Character from them trapped: fuzzing found it, and `credentials.register` carries the
    /// code from a client.
    public init(_ text: String) throws(SiteAddressError) {
        var bytes: [UInt8] = []
        for byte in text.utf8 where byte != UInt8(ascii: "-") && byte != UInt8(ascii: " ") {
            let upper = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) ? byte - 32 : byte
            guard bytes.count < Self.length, Self.alphabetBytes.contains(upper) else { throw .malformedCode }
            bytes.append(upper)
        }
        guard bytes.count == Self.length else { throw .malformedCode }
        canonical = String(decoding: bytes, as: UTF8.self)
    }

    private static let alphabetBytes = Set(alphabet.map { $0.asciiValue! })

    /// A fresh code from `generator` (the system CSPRNG outside tests).
    public static func random(using generator: inout some RandomNumberGenerator) -> InvitationCode {
        let text = String((0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
        // The alphabet is the code's own, so this cannot throw; a failure would be a bug here.
        return (try? InvitationCode(text)) ?? InvitationCode(trusted: text)
    }

    private init(trusted: String) { canonical = trusted }

    /// Grouped for people: `7KQ2-M9XD-4TPA-ZC3N`.
    public var description: String {
        stride(from: 0, to: Self.length, by: 4).map { start in
            let from = canonical.index(canonical.startIndex, offsetBy: start)
            return String(canonical[from..<canonical.index(from, offsetBy: 4)])
        }.joined(separator: "-")
    }
}
