import AccessCore
import AccessJSON
import AccessStore
import Crypto
import FoundationEssentials
import NIOCore
import NIOHTTP1
import NIOSSL
import SiteContract

/// accessd's side of docs/site-api.md (`SiteTransport`): registration, status, item sync and
/// deletion, each call signed with the credential key. HTTPS is verified against the
/// system's CAs or the configured CA file, and the site's key against `[site] pins` when
/// there are any; plain HTTP only reaches loopback.
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
        /// The site's withdrawn controller certificates (reader protocol §1.1); nil when the
        /// site sent no list.
        public var withdrawnCertificates: Set<UInt64>?
    }

    static let maximumAnswer = 64 * 1024

    private let transport: SiteTransport
    private let timeout: TimeAmount

    /// `caFile`: PEM file of the CAs to trust instead of the system's; `pins`: the keys a
    /// site may present (`[site] pins`).
    public init(caFile: String?, timeout: Duration, pins: SitePins? = nil) throws {
        // Connecting gets half the call's time, 5 s at most: a site whose connection attempts
        // vanish (a firewall that drops them) is then reported as unreachable, by name, before
        // the call's own deadline hides why (issue #35). A refused connection or an untrusted
        // certificate is the answer at once, never tried again within the call: accessd
        // retries on its own schedule (the sync's backoff, the change channel's), and a person
        // at `register` wants the reason now.
        let connectMilliseconds = min(timeout.components.seconds * 500, 5000)
        transport = try SiteTransport(
            caFile: caFile, pins: pins, connectTimeout: .milliseconds(max(connectMilliseconds, 500)),
            maximumAnswer: Self.maximumAnswer)
        self.timeout = .nanoseconds(
            Int64(timeout.components.seconds) * 1_000_000_000
                + timeout.components.attoseconds / 1_000_000_000)
    }

    /// Nothing to close: each call's connection ends with it.
    public func shutdown() async {}

    // MARK: Calls

    public func register(
        site: SiteAddress, code: InvitationCode, deviceName: String,
        credentialKey: P256.Signing.PublicKey,
        secondFactorKey: P256.Signing.PublicKey?
    ) async throws(SiteError) -> Registration {
        let request = RegistrationRequest(
            deviceName: deviceName, credentialKey: SiteText.base64(credentialKey),
            secondFactorKey: secondFactorKey.map(SiteText.base64))
        let answer = try await call(
            site: site, method: .POST, path: "/v1/invitations/\(code.canonical)/register",
            body: request, signer: nil, answer: RegistrationAnswer.self)
        return try SiteAnswers.registration(answer)
    }

    public func status(of stored: StoredCredential) async throws(SiteError) -> Status {
        let id = stored.credential.id
        let answer = try await call(
            site: try address(of: stored), method: .GET, path: "/v1/credentials/\(id)",
            body: Nothing?.none, signer: signer(stored), answer: CredentialStatusAnswer.self)
        return Status(state: answer.state, secondFactor: answer.secondFactor ?? stored.credential.secondFactorEnabled)
    }

    public func items(of stored: StoredCredential, after cursor: String) async throws(SiteError) -> ItemPage {
        let id = stored.credential.id
        let escaped = cursor.percentEncodedForQuery()
        let answer = try await call(
            site: try address(of: stored), method: .GET,
            path: "/v1/credentials/\(id)/items?cursor=\(escaped)", body: Nothing?.none,
            signer: signer(stored), answer: ItemPageAnswer.self)
        return try SiteAnswers.itemPage(answer, credential: id)
    }

    /// §4.4: the credential's version, once it differs from `since` or after `wait`.
    public func changes(of stored: StoredCredential, since: String?, wait: Duration) async throws(SiteError) -> String {
        let id = stored.credential.id
        var path = "/v1/credentials/\(id)/changes?wait=\(wait.components.seconds)"
        if let since { path += "&since=" + since.percentEncodedForQuery() }
        let answer = try await call(
            site: try address(of: stored), method: .GET, path: path, body: Nothing?.none,
            signer: signer(stored), answer: ChangesAnswer.self,
            holding: .seconds(wait.components.seconds))
        guard (1...256).contains(answer.version.utf8.count) else {
            throw .malformedAnswer("a version is 1 to 256 bytes")
        }
        return answer.version
    }

    /// §4.5: a batch of the credential's access events; the `through` the site has recorded.
    public func uploadEvents(of stored: StoredCredential, _ batch: AuditUploadRequest) async throws(SiteError) -> Int64
    {
        let answer = try await call(
            site: try address(of: stored), method: .POST, path: "/v1/credentials/\(stored.credential.id)/events",
            body: batch, signer: signer(stored), answer: AuditUploadAnswer.self)
        guard answer.through >= 0 else { throw .malformedAnswer("through must be a sequence number") }
        return answer.through
    }

    public func delete(_ stored: StoredCredential) async throws(SiteError) {
        _ = try await call(
            site: try address(of: stored), method: .DELETE, path: "/v1/credentials/\(stored.credential.id)",
            body: Nothing?.none, signer: signer(stored), answer: Nothing.self)
    }

    /// §7, a reader controller's call (readersim's readers use it, so that the reader side
    /// has the same bounds, timeout and clock retry as accessd's): one page of the
    /// credential and Aperio changes after `cursor`, held up to `wait` when there are none.
    public func provisioning(
        site: SiteAddress, readerKey: P256.Signing.PrivateKey, cursor: String,
        wait: Duration
    ) async throws(SiteError) -> ValidatedProvisioningPage {
        let escaped = cursor.percentEncodedForQuery()
        let answer = try await call(
            site: site, method: .GET,
            path: "/v1/readers/provisioning?cursor=\(escaped)&wait=\(wait.components.seconds)",
            body: Nothing?.none,
            signer: Signer(principal: .reader(ReaderKeyID(publicKey: readerKey.publicKey)), key: readerKey),
            answer: ProvisioningPage.self, holding: .seconds(wait.components.seconds))
        do {
            return try answer.validated()
        } catch {
            throw .malformedAnswer(error.description)
        }
    }

    // MARK: Transport

    private struct Signer {
        var principal: SiteRequestAuthorization.Principal
        var key: P256.Signing.PrivateKey
    }

    private func signer(_ stored: StoredCredential) throws(SiteError) -> Signer {
        guard let key = stored.credential.signingKey else { throw .malformedAnswer("the credential has no key") }
        return Signer(principal: .credential(stored.credential.id), key: key)
    }

    private func address(of stored: StoredCredential) throws(SiteError) -> SiteAddress {
        do {
            return try SiteAddress.parseHost(stored.siteURL)
        } catch {
            throw .address(error)
        }
    }

    /// A call without a body.
    private struct Nothing: Codable, Sendable {}

    /// One call; when the site says our clock is off, one retry on the site's clock.
    private func call<Body: Encodable, Answer: Decodable & Sendable>(
        site: SiteAddress, method: HTTPMethod, path: String, body: Body?, signer: Signer?, answer: Answer.Type,
        holding: TimeAmount = .zero
    ) async throws(SiteError) -> Answer {
        do {
            try site.checkTransport()
        } catch {
            throw .address(error)
        }
        var bodyBytes: [UInt8]?
        if let body {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            guard let data = try? encoder.encode(body) else { throw .malformedAnswer("cannot encode the request") }
            bodyBytes = Array(data)
        }
        var clockOffset: Int64 = 0
        for attempt in 0..<2 {
            let (status, text) = try await exchange(
                site: site, method: method, path: path, body: bodyBytes,
                signer: signer, clockOffset: clockOffset, holding: holding)
            switch try SiteAnswers.read(
                Answer.self, status: status, body: text, firstAttempt: attempt == 0,
                now: Int64(Date().timeIntervalSince1970))
            {
            case .answer(let answer): return answer
            case .retry(let offset): clockOffset = offset
            }
        }
        throw .refused(status: 401, code: "auth.expired", message: "the site keeps refusing our clock")
    }

    /// The call's deadline: connect, handshake, head and body within `timeout`, together (a
    /// site dribbling its body a byte at a time held a call open past 90 s with a 5 s
    /// timeout, issue #17). Cancelling the call's task closes its connection.
    private func sendWithinTimeout(_ request: SiteTransport.Request, holding: TimeAmount) async throws -> (
        Int, ByteBuffer
    ) {
        // A long poll (§4.4) is held by the site on purpose: its wait adds to the timeout.
        let timeout = self.timeout + holding
        return try await withThrowingTaskGroup(of: (Int, ByteBuffer)?.self) { group in
            group.addTask { [transport] in
                let answer = try await transport.send(request)
                return (answer.status, answer.body)
            }
            group.addTask {
                try await Task.sleep(for: .nanoseconds(timeout.nanoseconds))
                return nil
            }
            defer { group.cancelAll() }
            guard case let result?? = try await group.next() else { throw DeadlineExceeded() }
            return result
        }
    }

    private struct DeadlineExceeded: Error {}

    private func exchange(
        site: SiteAddress, method: HTTPMethod, path: String, body: [UInt8]?, signer: Signer?,
        clockOffset: Int64, holding: TimeAmount
    ) async throws(SiteError) -> (Int, Data?) {
        let fullPath = site.pathPrefix + path
        var headers = HTTPHeaders()
        let bodyBytes = body ?? []
        if body != nil { headers.add(name: "Content-Type", value: "application/json") }
        headers.add(name: "Accept", value: "application/json")
        headers.add(name: "User-Agent", value: "accessd/\(AccessDaemon.version)")
        if let signer {
            var generator = SystemRandomNumberGenerator()
            let nonce = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let authorization = SiteRequestAuthorization.sign(
                method: method.rawValue, pathAndQuery: fullPath, body: bodyBytes,
                time: Int64(Date().timeIntervalSince1970) + clockOffset, nonce: nonce, principal: signer.principal,
                key: signer.key)
            headers.add(name: "Authorization", value: authorization.headerValue)
        }
        let request = SiteTransport.Request(site: site, method: method, target: fullPath, headers: headers, body: body)
        let status: Int
        let buffer: ByteBuffer
        do {
            (status, buffer) = try await sendWithinTimeout(request, holding: holding)
        } catch is DeadlineExceeded {
            throw .timedOut
        } catch let error as SiteTransport.KeyNotPinned {
            throw .keyNotPinned(host: site.description, presented: error.presented, pinned: error.pinned)
        } catch let error as NIOTooManyBytesError {
            throw .malformedAnswer("larger than \(Self.maximumAnswer) bytes (\(error))")
        } catch let error as HTTPParserError {
            throw .malformedAnswer("not HTTP (\(error))")
        } catch {
            throw .unreachable(SiteConnectionFailure.sentence(for: error, host: site.description))
        }
        return (status, try SiteAnswers.body(buffer.readableBytesView))
    }
}
