/// An invitation code (docs/site-api.md §2): 16 characters of Crockford's base32, 80 bits.
/// Typed codes are forgiving (case, dashes, spaces); the canonical form is upper case
/// without dashes.
public struct InvitationCode: Hashable, Sendable, CustomStringConvertible {
    public static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
    public static let length = 16

    /// Upper case, no dashes: what goes into the URL.
    public let canonical: String

    public init(_ text: String) throws(SiteAddressError) {
        var characters: [Character] = []
        for character in text where character != "-" && character != " " {
            let upper = Character(character.uppercased())
            guard Self.alphabet.contains(upper) else { throw .malformedCode }
            characters.append(upper)
        }
        guard characters.count == Self.length else { throw .malformedCode }
        canonical = String(characters)
    }

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
