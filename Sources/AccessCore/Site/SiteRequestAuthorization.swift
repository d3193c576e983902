import Crypto

/// The `Authorization` header of a signed site call (docs/site-api.md §4): the credential
/// key (or, for reader provisioning, §7, the reader controller's key) signs the method,
/// path, time, a nonce and the body's digest, so a request cannot be altered, replayed
/// after its window, or made by anyone without the key.
public struct SiteRequestAuthorization: Hashable, Sendable {
    /// Who signs: a credential holder, or a reader controller. The two sign different first
    /// lines, so one's signature can never pass as the other's.
    public enum Principal: Hashable, Sendable {
        case credential(CredentialID)
        case reader(ReaderKeyID)

        var field: String {
            switch self {
            case .credential(let id): "credential=\(id)"
            case .reader(let id): "reader=\(id)"
            }
        }

        var signedFirstLine: String {
            switch self {
            case .credential: "ACR1 site request"
            case .reader: "ACR1 reader request"
            }
        }
    }

    public static let scheme = "ACR1"
    /// How far the request's time may be from the site's clock.
    public static let allowedSkew: Int64 = 300
    /// How long a site remembers nonces: longer than the window a time is accepted in.
    public static let nonceMemory: Int64 = 600

    public var principal: Principal
    public var time: Int64
    /// 16 random bytes.
    public var nonce: [UInt8]
    public var signature: [UInt8]

    /// The credential that signed, for a holder's call.
    public var credentialID: CredentialID? {
        if case .credential(let id) = principal { id } else { nil }
    }

    /// The reader controller that signed, for a provisioning call.
    public var readerKeyID: ReaderKeyID? {
        if case .reader(let id) = principal { id } else { nil }
    }

    /// Signs a holder's request. `nonce` comes from the system CSPRNG outside tests.
    public static func sign(
        method: String, pathAndQuery: String, body: [UInt8], time: Int64, nonce: [UInt8],
        credentialID: CredentialID, key: P256.Signing.PrivateKey
    ) -> SiteRequestAuthorization {
        sign(
            method: method, pathAndQuery: pathAndQuery, body: body, time: time, nonce: nonce,
            principal: .credential(credentialID), key: key)
    }

    public static func sign(
        method: String, pathAndQuery: String, body: [UInt8], time: Int64, nonce: [UInt8],
        principal: Principal, key: P256.Signing.PrivateKey
    ) -> SiteRequestAuthorization {
        let content = signedContent(
            principal: principal, method: method, pathAndQuery: pathAndQuery, time: time,
            nonce: nonce, body: body)
        return SiteRequestAuthorization(
            principal: principal, time: time, nonce: nonce,
            signature: ProtocolCrypto.sign(content, with: key))
    }

    /// Whether the signature covers this request and was made with `key`.
    public func verifies(method: String, pathAndQuery: String, body: [UInt8], key: P256.Signing.PublicKey) -> Bool {
        let content = Self.signedContent(
            principal: principal, method: method, pathAndQuery: pathAndQuery, time: time,
            nonce: nonce, body: body)
        return ProtocolCrypto.verify(signature, over: content, with: key)
    }

    /// The bytes whose SHA-256 is signed: six lines joined by `\n` (docs/site-api.md §4, §7).
    public static func signedContent(
        principal: Principal, method: String, pathAndQuery: String, time: Int64,
        nonce: [UInt8], body: [UInt8]
    ) -> [UInt8] {
        let digest = Array(SHA256.hash(data: body)).hexString
        let text = [principal.signedFirstLine, method, pathAndQuery, String(time), nonce.hexString, digest]
            .joined(separator: "\n")
        return Array(text.utf8)
    }

    /// `ACR1 credential=<id>, time=<t>, nonce=<hex>, signature=<base64>` (`reader=<key id>`
    /// for a reader controller).
    public var headerValue: String {
        "\(Self.scheme) \(principal.field), time=\(time), nonce=\(nonce.hexString), signature=\(Base64.encode(signature))"
    }

    /// Parses a header value; nil for anything that is not exactly the form above.
    public init?(headerValue: String) {
        guard headerValue.utf8.count <= 512, headerValue.hasPrefix(Self.scheme + " ") else { return nil }
        var fields: [String: String] = [:]
        for part in headerValue.dropFirst(Self.scheme.count + 1).split(separator: ",") {
            let pair = part.drop(while: { $0 == " " })
            guard let equals = pair.firstIndex(of: "=") else { return nil }
            let name = String(pair[..<equals])
            guard fields[name] == nil else { return nil }
            fields[name] = String(pair[pair.index(after: equals)...])
        }
        let principal: Principal
        if let id = fields["credential"].flatMap(CredentialID.init), fields["reader"] == nil {
            principal = .credential(id)
        } else if let id = fields["reader"].flatMap({ ReaderKeyID($0) }), fields["credential"] == nil {
            principal = .reader(id)
        } else {
            return nil
        }
        guard fields.count == 4,
            let time = fields["time"].flatMap({ Int64($0) }),
            let nonce = fields["nonce"].flatMap({ [UInt8](hexString: $0) }), nonce.count == 16,
            let signature = fields["signature"].flatMap(Base64.decode), signature.count == 64
        else { return nil }
        self.init(principal: principal, time: time, nonce: nonce, signature: signature)
    }

    public init(principal: Principal, time: Int64, nonce: [UInt8], signature: [UInt8]) {
        self.principal = principal
        self.time = time
        self.nonce = nonce
        self.signature = signature
    }
}
