import Crypto

/// A site handing over from one signing key to the next (docs/reader-protocol.md §1.2): the
/// old key signs the new one, so a holder registered under any earlier key follows a chain
/// of these statements to the key that signs controller certificates now. A statement is
/// public (it carries no secret) and travels in item sync and provisioning pages.
public struct SiteKeyTransition: Hashable, Sendable {
    public static let format: UInt8 = 1
    static let size = 1 + 4 + 4 + 4 + 33 + 64

    public let siteTag: SiteTag
    /// The new key's number: each statement of a site names a higher one than the last.
    public let generation: UInt32
    /// Unix seconds: from when the new key signs certificates. The old key's certificates
    /// stay acceptable for the longest certificate after this (`retirement`).
    public let since: UInt32
    public let newKey: P256.Signing.PublicKey
    /// The old key's signature over `signedContent`, raw `r ‖ s`.
    public let signature: [UInt8]

    static let domain = Array("ACR3 site key".utf8)

    public static func sign(
        oldKey: P256.Signing.PrivateKey, siteTag: SiteTag, generation: UInt32, since: UInt32,
        newKey: P256.Signing.PublicKey
    ) -> SiteKeyTransition {
        let body = Self.body(siteTag: siteTag, generation: generation, since: since, newKey: newKey)
        return SiteKeyTransition(
            siteTag: siteTag, generation: generation, since: since, newKey: newKey,
            signature: ProtocolCrypto.sign(domain + body, with: oldKey))
    }

    private init(
        siteTag: SiteTag, generation: UInt32, since: UInt32, newKey: P256.Signing.PublicKey, signature: [UInt8]
    ) {
        self.siteTag = siteTag
        self.generation = generation
        self.since = since
        self.newKey = newKey
        self.signature = signature
    }

    /// Decodes a statement that is exactly `bytes` (110 of them).
    public init(decoding bytes: [UInt8]) throws(SiteKeyTransitionError) {
        guard bytes.count == Self.size else { throw .size(bytes.count) }
        var reader = ByteReader(bytes)
        guard let format = reader.readUInt8(), format == Self.format else { throw .unknownFormat(bytes[0]) }
        guard let tag = reader.readUInt32(), let generation = reader.readUInt32(), let since = reader.readUInt32(),
            let keyBytes = reader.readBytes(33), let signature = reader.readBytes(64)
        else { throw .size(bytes.count) }
        guard let key = try? P256.Signing.PublicKey(compressedRepresentation: keyBytes) else { throw .invalidKey }
        self.init(siteTag: SiteTag(tag), generation: generation, since: since, newKey: key, signature: signature)
    }

    public var encoded: [UInt8] { body + signature }
    public var signedContent: [UInt8] { Self.domain + body }

    /// When the key this statement replaces stops being trusted: the longest certificate it
    /// could have signed just before `since` has ended by then.
    public var retirement: Double { Double(since) + Double(ControllerCertificate.maximumValidity) }

    private var body: [UInt8] { Self.body(siteTag: siteTag, generation: generation, since: since, newKey: newKey) }

    private static func body(
        siteTag: SiteTag, generation: UInt32, since: UInt32, newKey: P256.Signing.PublicKey
    ) -> [UInt8] {
        var writer = ByteWriter(capacity: size)
        writer.write(format)
        writer.write(siteTag.rawValue)
        writer.write(generation)
        writer.write(since)
        writer.write(Array(newKey.compressedRepresentation))
        return writer.bytes
    }

    public static func == (lhs: SiteKeyTransition, rhs: SiteKeyTransition) -> Bool { lhs.encoded == rhs.encoded }
    public func hash(into hasher: inout Hasher) { hasher.combine(encoded) }
}

public enum SiteKeyTransitionError: Error, Hashable, Sendable, CustomStringConvertible {
    case size(Int)
    case unknownFormat(UInt8)
    case invalidKey

    public var description: String {
        switch self {
        case .size(let count): "a site key statement is 110 bytes, not \(count)"
        case .unknownFormat(let format): "unknown site key statement format \(format)"
        case .invalidKey: "the new site key is not a compressed P-256 point"
        }
    }
}
