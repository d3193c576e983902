import AccessCore
import AccessStore
import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

/// accessd's side of docs/site-api.md over AsyncHTTPClient: registration, status, item sync
/// and deletion, each call signed with the credential key. HTTPS is verified against the
/// system's CAs or the configured CA file; plain HTTP only reaches loopback.
public final class SiteClient: Sendable {
    /// What registration returns: everything needed to build the stored credential.
    public struct Registration: Sendable {
        public var credentialID: CredentialID
        public var state: CredentialState
        public var cardholderName: String
        public var secondFactor: Bool
        public var siteName: String
        public var siteTag: SiteTag
        public var sitePublicKey: P256.Signing.PublicKey
    }

    public struct Status: Sendable {
        public var state: CredentialState
        public var secondFactor: Bool
    }

    public struct ItemPage: Sendable {
        public var cursor: String
        public var items: [StoredItem]
        public var removed: [String]
        public var more: Bool
    }

    static let maximumAnswer = 64 * 1024

    private let http: HTTPClient
    private let timeout: TimeAmount

    /// `caFile`: PEM file of the CAs to trust instead of the system's.
    public init(caFile: String?, timeout: Duration) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile { tls.trustRoots = .file(caFile) }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow)
        configuration.timeout = .init(connect: .seconds(Int64(min(timeout.components.seconds, 10))))
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.timeout = .nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000
            + timeout.components.attoseconds / 1_000_000_000)
    }

    public func shutdown() async {
        try? await http.shutdown()
    }

    // MARK: Calls

    public func register(site: SiteAddress, code: InvitationCode, deviceName: String,
                         credentialKey: P256.Signing.PublicKey,
                         secondFactorKey: P256.Signing.PublicKey?) async throws(SiteError) -> Registration {
        var body: [String: Any] = ["deviceName": deviceName,
                                   "credentialKey": Base64.encode(Array(credentialKey.x963Representation))]
        if let secondFactorKey { body["secondFactorKey"] = Base64.encode(Array(secondFactorKey.x963Representation)) }
        let answer = try await call(site: site, method: .POST, path: "/v1/invitations/\(code.canonical)/register",
                                    body: body, signer: nil)
        guard let credential = answer["credential"] as? [String: Any], let siteObject = answer["site"] as? [String: Any],
              let id = (credential["id"] as? String).flatMap(CredentialID.init),
              let state = (credential["state"] as? String).flatMap(CredentialState.init(rawValue:)),
              let cardholder = credential["cardholderName"] as? String,
              let secondFactor = credential["secondFactor"] as? Bool,
              let siteName = siteObject["name"] as? String,
              let tagText = siteObject["tag"] as? String, let tag = UInt32(tagText, radix: 16),
              let keyText = siteObject["publicKey"] as? String, let keyBytes = Base64.decode(keyText),
              let siteKey = try? P256.Signing.PublicKey(x963Representation: keyBytes)
        else { throw .malformedAnswer("the registration answer lacks or garbles a field") }
        return Registration(credentialID: id, state: state, cardholderName: cardholder, secondFactor: secondFactor,
                            siteName: siteName, siteTag: SiteTag(tag), sitePublicKey: siteKey)
    }

    public func status(of stored: StoredCredential) async throws(SiteError) -> Status {
        let id = stored.credential.id
        let answer = try await call(site: try address(of: stored), method: .GET, path: "/v1/credentials/\(id)",
                                    body: nil, signer: signer(stored))
        guard let state = (answer["state"] as? String).flatMap(CredentialState.init(rawValue:)) else {
            throw .malformedAnswer("the status answer has no valid state")
        }
        return Status(state: state, secondFactor: answer["secondFactor"] as? Bool ?? stored.credential.secondFactorEnabled)
    }

    public func items(of stored: StoredCredential, after cursor: String) async throws(SiteError) -> ItemPage {
        let id = stored.credential.id
        let escaped = cursor.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "0"
        let answer = try await call(site: try address(of: stored), method: .GET,
                                    path: "/v1/credentials/\(id)/items?cursor=\(escaped)", body: nil, signer: signer(stored))
        guard let next = answer["cursor"] as? String, let rawItems = answer["items"] as? [[String: Any]],
              let removed = answer["removed"] as? [String] else {
            throw .malformedAnswer("the sync answer lacks cursor, items or removed")
        }
        var items: [StoredItem] = []
        for raw in rawItems {
            guard let itemID = raw["id"] as? String, !itemID.isEmpty, itemID.utf8.count <= 128,
                  let type = raw["type"] as? String, let name = raw["name"] as? String,
                  let state = (raw["state"] as? String).flatMap(CredentialState.init(rawValue:)) else {
                throw .malformedAnswer("an item lacks id, type, name or state")
            }
            var item = StoredItem(id: itemID, credentialID: id, type: type, name: name, state: state)
            if type == "aperio" {
                guard let aperio = raw["aperio"] as? [String: Any],
                      let identifier = (aperio["identifier"] as? String).flatMap({ [UInt8](hexString: $0) }),
                      identifier.count == 8,
                      let key = (aperio["key"] as? String).flatMap(Base64.decode), key.count == 32,
                      let tagText = raw["siteTag"] as? String, let tag = UInt32(tagText, radix: 16) else {
                    throw .malformedAnswer("an aperio item lacks its identifier, key or site tag")
                }
                item.aperioIdentifier = identifier
                item.aperioKey = key
                item.siteTag = SiteTag(tag)
            } else if let data = raw["data"] {
                guard JSONSerialization.isValidJSONObject(data),
                      let encoded = try? JSONSerialization.data(withJSONObject: data, options: [.sortedKeys]) else {
                    throw .malformedAnswer("an item's data is not an object")
                }
                item.data = String(decoding: encoded, as: UTF8.self)
            }
            items.append(item)
        }
        return ItemPage(cursor: next, items: items, removed: removed, more: answer["more"] as? Bool ?? false)
    }

    public func delete(_ stored: StoredCredential) async throws(SiteError) {
        _ = try await call(site: try address(of: stored), method: .DELETE, path: "/v1/credentials/\(stored.credential.id)",
                           body: nil, signer: signer(stored))
    }

    // MARK: Transport

    private struct Signer {
        var id: CredentialID
        var key: P256.Signing.PrivateKey
    }

    private func signer(_ stored: StoredCredential) throws(SiteError) -> Signer {
        guard let key = stored.credential.signingKey else { throw .malformedAnswer("the credential has no key") }
        return Signer(id: stored.credential.id, key: key)
    }

    private func address(of stored: StoredCredential) throws(SiteError) -> SiteAddress {
        do {
            return try SiteAddress.parseHost(stored.siteURL)
        } catch {
            throw .address(error)
        }
    }

    /// One call; when the site says our clock is off, one retry on the site's clock.
    private func call(site: SiteAddress, method: HTTPMethod, path: String, body: [String: Any]?,
                      signer: Signer?) async throws(SiteError) -> [String: Any] {
        do {
            try site.checkTransport()
        } catch {
            throw .address(error)
        }
        var clockOffset: Int64 = 0
        for attempt in 0..<2 {
            let (status, object) = try await exchange(site: site, method: method, path: path, body: body,
                                                      signer: signer, clockOffset: clockOffset)
            if (200..<300).contains(status) { return object ?? [:] }
            guard let error = object?["error"] as? [String: Any], let code = error["code"] as? String else {
                throw .malformedAnswer("HTTP \(status) without an error body")
            }
            if code == "auth.expired", attempt == 0, let serverTime = error["serverTime"] as? Int64 {
                clockOffset = serverTime - Int64(Date().timeIntervalSince1970)
                continue
            }
            throw .refused(status: status, code: code, message: error["message"] as? String ?? "")
        }
        throw .refused(status: 401, code: "auth.expired", message: "the site keeps refusing our clock")
    }

    private func exchange(site: SiteAddress, method: HTTPMethod, path: String, body: [String: Any]?, signer: Signer?,
                          clockOffset: Int64) async throws(SiteError) -> (Int, [String: Any]?) {
        let fullPath = site.pathPrefix + path
        var request = HTTPClientRequest(url: site.description + path)
        request.method = method
        var bodyBytes: [UInt8] = []
        if let body {
            guard let data = try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys]) else {
                throw .malformedAnswer("cannot encode the request")
            }
            bodyBytes = Array(data)
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: bodyBytes))
        }
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "accessd/\(AccessDaemon.version)")
        if let signer {
            var generator = SystemRandomNumberGenerator()
            let nonce = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let authorization = SiteRequestAuthorization.sign(
                method: method.rawValue, pathAndQuery: fullPath, body: bodyBytes,
                time: Int64(Date().timeIntervalSince1970) + clockOffset, nonce: nonce, credentialID: signer.id,
                key: signer.key)
            request.headers.add(name: "Authorization", value: authorization.headerValue)
        }
        let status: Int
        let buffer: ByteBuffer
        do {
            let response = try await http.execute(request, timeout: timeout)
            status = Int(response.status.code)
            buffer = try await response.body.collect(upTo: Self.maximumAnswer)
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout
            || error == .connectTimeout {
            throw .timedOut
        } catch let error as HTTPClientError where error == .invalidURL || error == .emptyHost {
            throw .unreachable("\(error)")
        } catch let error as NIOTooManyBytesError {
            throw .malformedAnswer("larger than \(Self.maximumAnswer) bytes (\(error))")
        } catch let error as HTTPParserError {
            throw .malformedAnswer("not HTTP (\(error))")
        } catch {
            throw .unreachable(String(describing: error))
        }
        if buffer.readableBytes == 0 { return (status, nil) }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(buffer.readableBytesView))) as? [String: Any] else {
            throw .malformedAnswer("HTTP \(status) with a body that is not a JSON object")
        }
        return (status, object)
    }
}
