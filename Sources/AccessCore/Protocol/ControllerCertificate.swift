import Crypto

/// A reader controller's certificate (docs/reader-protocol.md §1.1, version 3): the site
/// vouches, with its own key, that a controller's key may speak for the readers it names
/// until a given second. A version 3 reader signs with that controller key and sends the
/// certificate with its challenge, so the site's private key never leaves the site and one
/// stolen controller speaks only for its own readers, and only until its certificate ends.
///
/// Hand-written rather than X.509 (swift-certificates is in the mirror): it crosses a BLE
/// link inside the first message, fragmented for a 23-byte MTU, and a controller's firmware
/// must check it; 123 bytes for one reader against 400 or more for the smallest X.509
/// certificate, and nothing to parse but fixed fields.
public struct ControllerCertificate: Hashable, Sendable {
    /// The layout's version: the first byte. Another value is refused (`unknownFormat`).
    public static let format: UInt8 = 1
    /// A certificate names 1 to 32 readers; a controller with more gets several.
    public static let maximumReaders = 32
    /// At most 7 days between `validFrom` and `validUntil`: a withdrawn controller's
    /// certificates are the last thing that can still open doors, and they end this soon.
    public static let maximumValidity: UInt32 = 7 * 86_400
    /// The size of every field but the reader ids and the signature.
    static let fixedSize = 1 + 4 + 8 + 4 + 4 + 33 + 1

    public let siteTag: SiteTag
    /// Chosen by the site, unique within it: what a withdrawal names (§1.1).
    public let serial: UInt64
    /// Unix seconds: valid from `validFrom` on, before `validUntil`.
    public let validFrom: UInt32
    public let validUntil: UInt32
    public let controllerKey: P256.Signing.PublicKey
    /// The readers the controller speaks for, in the order the site wrote them.
    public let readers: [ReaderID]
    /// The site's signature over `signedContent`, raw `r ‖ s`.
    public let signature: [UInt8]

    /// Signs a certificate with the site key; the caller has chosen a fresh serial.
    public static func issue(
        siteKey: P256.Signing.PrivateKey, siteTag: SiteTag, serial: UInt64, validFrom: UInt32,
        validUntil: UInt32, controllerKey: P256.Signing.PublicKey, readers: [ReaderID]
    ) throws(ControllerCertificateError) -> ControllerCertificate {
        let body = try Self.body(
            siteTag: siteTag, serial: serial, validFrom: validFrom, validUntil: validUntil,
            controllerKey: controllerKey, readers: readers)
        return ControllerCertificate(
            siteTag: siteTag, serial: serial, validFrom: validFrom, validUntil: validUntil,
            controllerKey: controllerKey, readers: readers,
            signature: ProtocolCrypto.sign(Self.domain + body, with: siteKey))
    }

    private init(
        siteTag: SiteTag, serial: UInt64, validFrom: UInt32, validUntil: UInt32,
        controllerKey: P256.Signing.PublicKey, readers: [ReaderID], signature: [UInt8]
    ) {
        self.siteTag = siteTag
        self.serial = serial
        self.validFrom = validFrom
        self.validUntil = validUntil
        self.controllerKey = controllerKey
        self.readers = readers
        self.signature = signature
    }

    /// Decodes a certificate that is the whole of `bytes`; trailing bytes are refused.
    public init(decoding bytes: [UInt8]) throws(ControllerCertificateError) {
        var reader = ByteReader(bytes)
        try self.init(reading: &reader)
        guard reader.isAtEnd else { throw .trailingBytes(reader.remaining) }
    }

    /// Decodes a certificate at the reader's position (inside a challenge, §6), checking its
    /// structure (not its signature, its validity or its readers: `verify` does).
    init(reading reader: inout ByteReader) throws(ControllerCertificateError) {
        guard let format = reader.readUInt8() else { throw .truncated }
        guard format == Self.format else { throw .unknownFormat(format) }
        guard let tag = reader.readUInt32(), let serialHigh = reader.readUInt32(),
            let serialLow = reader.readUInt32(), let validFrom = reader.readUInt32(),
            let validUntil = reader.readUInt32(), let keyBytes = reader.readBytes(33),
            let count = reader.readUInt8()
        else { throw .truncated }
        guard (1...Self.maximumReaders).contains(Int(count)) else { throw .readerCount(Int(count)) }
        guard let key = try? P256.Signing.PublicKey(compressedRepresentation: keyBytes) else {
            throw .invalidControllerKey
        }
        var readers: [ReaderID] = []
        for _ in 0..<count {
            guard let id = reader.readUInt32() else { throw .truncated }
            readers.append(ReaderID(id))
        }
        guard let signature = reader.readBytes(64) else { throw .truncated }
        try Self.checkFields(validFrom: validFrom, validUntil: validUntil, readers: readers)
        self.init(
            siteTag: SiteTag(tag), serial: UInt64(serialHigh) << 32 | UInt64(serialLow), validFrom: validFrom,
            validUntil: validUntil, controllerKey: key, readers: readers, signature: signature)
    }

    /// The certificate as it travels: its fields, then the site's signature.
    public var encoded: [UInt8] { body + signature }

    /// What the site signs: the domain string, then every field before the signature.
    public var signedContent: [UInt8] { Self.domain + body }

    static let domain = Array("ACR3 controller certificate".utf8)

    private var body: [UInt8] {
        // The fields were checked when the certificate was made or decoded.
        (try? Self.body(
            siteTag: siteTag, serial: serial, validFrom: validFrom, validUntil: validUntil,
            controllerKey: controllerKey, readers: readers)) ?? []
    }

    private static func body(
        siteTag: SiteTag, serial: UInt64, validFrom: UInt32, validUntil: UInt32,
        controllerKey: P256.Signing.PublicKey, readers: [ReaderID]
    ) throws(ControllerCertificateError) -> [UInt8] {
        try checkFields(validFrom: validFrom, validUntil: validUntil, readers: readers)
        var writer = ByteWriter(capacity: fixedSize + 4 * readers.count)
        writer.write(format)
        writer.write(siteTag.rawValue)
        writer.write(UInt32(truncatingIfNeeded: serial >> 32))
        writer.write(UInt32(truncatingIfNeeded: serial))
        writer.write(validFrom)
        writer.write(validUntil)
        writer.write(Array(controllerKey.compressedRepresentation))
        writer.write(UInt8(readers.count))
        for reader in readers { writer.write(reader.rawValue) }
        return writer.bytes
    }

    private static func checkFields(
        validFrom: UInt32, validUntil: UInt32, readers: [ReaderID]
    ) throws(ControllerCertificateError) {
        guard (1...maximumReaders).contains(readers.count) else { throw .readerCount(readers.count) }
        guard !readers.contains(where: { $0.rawValue == 0 }) else { throw .zeroReader }
        guard Set(readers).count == readers.count else { throw .duplicateReader }
        guard validUntil > validFrom, validUntil - validFrom <= maximumValidity else {
            throw .validity(from: validFrom, until: validUntil)
        }
    }
}

extension ControllerCertificate {
    /// Two certificates are the same when their bytes are (the key type is not Hashable).
    public static func == (lhs: ControllerCertificate, rhs: ControllerCertificate) -> Bool {
        lhs.encoded == rhs.encoded
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(encoded) }
}

/// Why a certificate's bytes are not a certificate (docs/reader-protocol.md §1.1). A holder
/// refuses the challenge that carried it as malformed.
public enum ControllerCertificateError: Error, Hashable, Sendable, CustomStringConvertible {
    case truncated
    case trailingBytes(Int)
    case unknownFormat(UInt8)
    case invalidControllerKey
    case readerCount(Int)
    case zeroReader
    case duplicateReader
    case validity(from: UInt32, until: UInt32)

    public var description: String {
        switch self {
        case .truncated: "the certificate is truncated"
        case .trailingBytes(let count): "\(count) bytes after the certificate"
        case .unknownFormat(let format): "unknown certificate format \(format)"
        case .invalidControllerKey: "the controller key is not a compressed P-256 point"
        case .readerCount(let count): "a certificate names 1 to 32 readers, not \(count)"
        case .zeroReader: "a certificate names reader 00000000"
        case .duplicateReader: "a certificate names a reader twice"
        case .validity(let from, let until):
            "validity \(from)..<\(until) is empty or longer than 7 days"
        }
    }
}

/// A version 3 reader controller's signing identity: its own private key and the site's
/// certificate for the matching public key (§1.1).
public struct ControllerIdentity: Sendable {
    public let key: P256.Signing.PrivateKey
    public let certificate: ControllerCertificate

    /// Nil when the certificate is for another key: a reader would sign what no holder accepts.
    public init?(key: P256.Signing.PrivateKey, certificate: ControllerCertificate) {
        guard key.publicKey.compressedRepresentation == certificate.controllerKey.compressedRepresentation else {
            return nil
        }
        self.key = key
        self.certificate = certificate
    }
}
