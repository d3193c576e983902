import AccessCore
import AccessJSON
import Crypto
import Foundation
import SiteContract

/// One HTTP request as the site sees it.
struct SiteRequest: Sendable {
    var method: String
    /// Path and query exactly as sent (what the signature covers).
    var target: String
    var headers: [String: String]
    var body: [UInt8]
}

struct SiteResponse: Sendable {
    var status: Int
    var body: [UInt8]
    /// A long poll (§4.4) with nothing new yet: the server asks `recheck` again every 250 ms
    /// until it answers, and sends this response at `waitUntil` if it never does.
    var waitUntil: Double?
    var recheck: (@Sendable () -> SiteResponse?)?

    static func json(_ status: Int, _ message: some Encodable) -> SiteResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(message)) ?? Data("{}".utf8)
        return SiteResponse(status: status, body: Array(data))
    }

    static func error(_ status: Int, _ code: String, _ message: String, serverTime: Int64? = nil) -> SiteResponse {
        json(status, SiteErrorAnswer(code: code, message: message, serverTime: serverTime))
    }
}

/// The site's side of docs/site-api.md: routes a request to registration, status, item
/// sync or deletion, checking signatures, times and nonces first. Transport-free, so the
/// HTTP server only moves bytes.
struct SiteAPI: Sendable {
    let database: SiteDatabase
    /// Items per sync answer before `more` is set.
    var pageSize = 100
    /// Whether §4.4 (`changes`) is served.
    var servesChanges = true
    /// Whether §4.5 (`events`) is served.
    var servesEvents = true
    /// A hostile site (or proxy): every change-channel call answered at once with a new
    /// version, to test that the client keeps a floor and a sync budget.
    var churnsChanges = false
    /// How long each controller certificate the site issues is valid (§7.3).
    var certificateValidity: UInt32 = 86_400
    /// Whether provisioning pages carry the site's private key, for readers of protocol
    /// versions 1-2 (`--legacy-readers`); without it the key never leaves the site.
    var givesSiteKey = false

    func handle(_ request: SiteRequest, now: Double) -> SiteResponse {
        do {
            return try route(request, now: now)
        } catch {
            return .error(500, "site.internal", "\(error)")
        }
    }

    private func route(_ request: SiteRequest, now: Double) throws -> SiteResponse {
        let pathOnly = request.target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.target
        let parts = pathOnly.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        switch (request.method, parts.count) {
        case ("POST", 4) where parts[0] == "v1" && parts[1] == "invitations" && parts[3] == "register":
            return try register(codeText: parts[2], body: request.body, now: now)
        case ("GET", 3) where parts[0] == "v1" && parts[1] == "readers" && parts[2] == "provisioning":
            return try provisioning(request, now: now)
        case (_, 3) where parts[0] == "v1" && parts[1] == "credentials",
            (_, 4)
        where parts[0] == "v1" && parts[1] == "credentials"
            && (parts[3] == "items" || parts[3] == "changes" && servesChanges
                || parts[3] == "events" && servesEvents):
            let credential: SiteDatabase.CredentialRow
            switch try authenticate(request, id: parts[2], now: now) {
            case .success(let row): credential = row
            case .failure(let response): return response
            }
            switch (request.method, parts.count) {
            case ("GET", 3): return status(credential)
            case ("DELETE", 3):
                try database.markDeleted(credential.id)
                return SiteResponse(status: 204, body: [])
            case ("GET", 4) where parts[3] == "changes":
                return try changes(credential, target: request.target, now: now)
            case ("POST", 4) where parts[3] == "events": return try events(credential, body: request.body, now: now)
            case ("GET", 4): return try items(credential, target: request.target, now: now)
            default: return .error(405, "method.notAllowed", "\(request.method) is not allowed here")
            }
        default:
            if parts.first == "v1" && (parts.count == 3 || parts.count == 4)
                && ["invitations", "credentials"].contains(parts[1])
                || parts == ["v1", "readers", "provisioning"]
            {
                return .error(405, "method.notAllowed", "\(request.method) is not allowed here")
            }
            return .error(404, "route.unknown", "no such resource: \(pathOnly)")
        }
    }

    // MARK: Registration

    private func register(codeText: String, body: [UInt8], now: Double) throws -> SiteResponse {
        guard let code = try? InvitationCode(codeText) else {
            return .error(404, "invitation.unknown", "no such invitation")
        }
        let request: RegistrationRequest
        do {
            request = try JSONDecoder().decode(RegistrationRequest.self, from: Data(body))
        } catch {
            return .error(400, "request.invalid", "the body must be a registration request: \(Self.reason(error))")
        }
        let deviceName = request.deviceName
        guard !deviceName.isEmpty, deviceName.utf8.count <= 128 else {
            return .error(400, "request.invalid", "deviceName must be a string of 1 to 128 bytes")
        }
        guard let key = SiteText.publicKey(request.credentialKey) else {
            return .error(400, "request.invalid", "credentialKey must be a base64 X9.63 P-256 public key")
        }
        var secondKey: P256.Signing.PublicKey?
        if let text = request.secondFactorKey {
            guard let parsed = SiteText.publicKey(text) else {
                return .error(400, "request.invalid", "secondFactorKey must be a base64 X9.63 P-256 public key")
            }
            secondKey = parsed
        }
        let site = try database.site()
        switch try database.register(
            code: code, deviceName: deviceName, publicKey: key, secondFactorKey: secondKey, now: now)
        {
        case .failure(.unknown):
            return .error(404, "invitation.unknown", "no such invitation")
        case .failure(.used):
            return .error(409, "invitation.used", "the invitation was already used")
        case .failure(.expired(let at)):
            return .error(410, "invitation.expired", "the invitation expired at \(Self.iso(at))")
        case .failure(.secondFactorRequired):
            return .error(
                422, "invitation.secondFactorRequired", "this invitation asks for a second factor: register with a PIN")
        case .success(let credential):
            return .json(
                201,
                RegistrationAnswer(
                    credential: CredentialStatusAnswer(
                        id: credential.id.description, state: credential.state,
                        cardholderName: credential.cardholder,
                        secondFactor: credential.secondFactor),
                    site: SiteDescription(
                        name: site.name, tag: site.tag.description,
                        publicKey: SiteText.base64(site.key.publicKey))))
        }
    }

    // MARK: Authenticated calls

    private enum Authentication {
        case success(SiteDatabase.CredentialRow)
        case failure(SiteResponse)
    }

    private func authenticate(_ request: SiteRequest, id: String, now: Double) throws -> Authentication {
        guard let header = request.headers["authorization"],
            let authorization = SiteRequestAuthorization(headerValue: header)
        else {
            return .failure(.error(401, "auth.missing", "an ACR1 Authorization header is required"))
        }
        guard let signer = authorization.credentialID, signer.description == id.lowercased(),
            let credential = try database.credential(signer), !credential.deleted,
            authorization.verifies(
                method: request.method, pathAndQuery: request.target, body: request.body,
                key: credential.publicKey)
        else {
            if let known = try CredentialID(id).flatMap(database.credential), known.deleted {
                return .failure(.error(404, "credential.unknown", "the credential was deleted"))
            }
            return .failure(.error(401, "auth.invalid", "unknown credential or bad signature"))
        }
        if let refusal = try freshness(authorization, now: now) { return .failure(refusal) }
        return .success(credential)
    }

    /// The time window and the nonce, the same for every signer (§4).
    func freshness(_ authorization: SiteRequestAuthorization, now: Double) throws -> SiteResponse? {
        guard abs(Double(authorization.time) - now) <= Double(SiteRequestAuthorization.allowedSkew) else {
            return .error(
                401, "auth.expired", "the request time is too far from the site's clock", serverTime: Int64(now))
        }
        guard try database.admitNonce(authorization.nonce, now: now) else {
            return .error(401, "auth.replayed", "the request was already made")
        }
        return nil
    }

    private func status(_ credential: SiteDatabase.CredentialRow) -> SiteResponse {
        .json(
            200,
            CredentialStatusAnswer(
                id: credential.id.description, state: credential.state,
                secondFactor: credential.secondFactor))
    }

    private func items(_ credential: SiteDatabase.CredentialRow, target: String, now: Double) throws -> SiteResponse {
        guard credential.state == .active else {
            return .error(
                403, "credential.\(credential.state.rawValue)", "the credential is \(credential.state.rawValue)")
        }
        let cursor: Int64
        switch SiteQuery(target).cursor(latest: try database.latestSequence()) {
        case .ok(let value): cursor = value
        case .refused(let refusal): return refusal
        }
        let changes = try database.items(for: credential.id, after: cursor, limit: pageSize + 1)
        let page = changes.prefix(pageSize)
        var items: [SiteItem] = []
        var removed: [String] = []
        for item in page {
            if item.removed {
                removed.append(item.id)
                continue
            }
            let content =
                (try? JSONDecoder().decode(SiteItemContent.self, from: Data(item.payload.utf8))) ?? SiteItemContent()
            items.append(SiteItem(id: item.id, type: item.type, name: item.name, state: item.state, content: content))
        }
        let next = page.last?.sequence ?? cursor
        let withdrawn = try database.withdrawnCertificates(now: now).map(String.init)
        return .json(
            200,
            ItemPageAnswer(
                cursor: String(next), items: items, removed: removed, more: changes.count > pageSize,
                withdrawnCertificates: withdrawn))
    }

    /// §4.4: the version at once when it differs from `since` (or without `since`), else
    /// when it changes within `wait` seconds, else the same version at the end of the wait.
    private func changes(_ credential: SiteDatabase.CredentialRow, target: String, now: Double) throws -> SiteResponse {
        let query = SiteQuery(target)
        let since = query.value("since").flatMap { String($0).removingPercentEncoding }
        let wait: Double
        switch query.wait(default: 25) {
        case .ok(let value): wait = value
        case .refused(let refusal): return refusal
        }
        let id = credential.id
        let database = self.database
        guard let current = try database.version(of: id) else {
            return .error(404, "credential.unknown", "no such credential")
        }
        if churnsChanges {
            return .json(200, ChangesAnswer(version: "\(current).\(UInt64.random(in: 0...UInt64.max))"))
        }
        var response = SiteResponse.json(200, ChangesAnswer(version: current))
        guard let since, since == current, wait > 0 else { return response }
        response.waitUntil = now + wait
        response.recheck = {
            guard let version = try? database.version(of: id) else {
                return .error(404, "credential.unknown", "no such credential")
            }
            return version == since ? nil : .json(200, ChangesAnswer(version: version))
        }
        return response
    }

    /// §4.5: a batch of the holder's access events, stored once each; answers the
    /// credential's `through`. A revoked credential's events are still taken: they are the
    /// record of what it did.
    private func events(_ credential: SiteDatabase.CredentialRow, body: [UInt8], now: Double) throws -> SiteResponse {
        let request: AuditUploadRequest
        do {
            request = try JSONDecoder().decode(AuditUploadRequest.self, from: Data(body))
        } catch {
            return .error(400, "request.invalid", "the body must be a batch of events: \(Self.reason(error))")
        }
        if let problem = request.problem { return .error(400, "request.invalid", problem) }
        return .json(200, AuditUploadAnswer(through: try database.recordAudit(credential.id, request, now: now)))
    }

    // MARK: Helpers

    /// What was wrong with a request body, in words a site's client can act on.
    static func reason(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "\(key.stringValue) is missing"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "\(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type"
        default: "not JSON"
        }
    }

    static func iso(_ time: Double) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: time))
    }
}
