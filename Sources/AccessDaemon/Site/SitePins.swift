import Crypto
import FoundationEssentials
import NIOSSL

/// The keys a site may present (`[site] pins`, docs/configuration.md): SHA-256 hashes of the
/// server certificate's SubjectPublicKeyInfo, written as curl's `--pinnedpubkey` writes them
/// (`sha256//` and the hash in base64). With pins set, a site whose certificate verified
/// against the trusted CAs is still refused unless its key is one of them: a CA the kiosk
/// trusts can no longer stand in for the site that issues and revokes its badges.
public struct SitePins: Sendable, Hashable {
    /// The pins as configured, in their written form.
    public let pins: [String]
    private let hashes: Set<Data>

    static let prefix = "sha256//"
    /// More than a site needs (its key, the next one, a backup), few enough to read in a log line.
    public static let maximumCount = 16

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case notSHA256(String)
        case notAHash(String)
        case tooMany(Int)

        public var description: String {
            switch self {
            case .notSHA256(let pin): "\(pin): a pin is sha256// and a SHA-256 hash in base64 (curl's --pinnedpubkey)"
            case .notAHash(let pin): "\(pin): not 32 bytes in base64 after sha256//"
            case .tooMany(let count): "\(count) pins: at most \(SitePins.maximumCount)"
            }
        }
    }

    public init(_ pins: [String]) throws(ParseError) {
        guard pins.count <= Self.maximumCount else { throw .tooMany(pins.count) }
        var hashes = Set<Data>()
        for pin in pins {
            guard pin.hasPrefix(Self.prefix) else { throw .notSHA256(String(pin.prefix(80))) }
            guard let hash = Data(base64Encoded: String(pin.dropFirst(Self.prefix.count))), hash.count == 32 else {
                throw .notAHash(String(pin.prefix(80)))
            }
            hashes.insert(hash)
        }
        self.pins = pins
        self.hashes = hashes
    }

    /// A public key as a pin (`sha256//…`): what `accessctl` and the refusal print, and what
    /// `openssl x509 -pubkey | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary |
    /// base64` gives for the same certificate.
    public static func pin(ofKey spki: some DataProtocol) -> String {
        prefix + Data(SHA256.hash(data: spki)).base64EncodedString()
    }

    public static func pin(of certificate: NIOSSLCertificate) throws -> String {
        pin(ofKey: try certificate.extractPublicKey().toSPKIBytes())
    }

    public func contains(_ pin: String) -> Bool {
        guard pin.hasPrefix(Self.prefix), let hash = Data(base64Encoded: String(pin.dropFirst(Self.prefix.count)))
        else {
            return false
        }
        return hashes.contains(hash)
    }
}
