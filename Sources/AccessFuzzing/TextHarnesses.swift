import AccessCore
import AccessDaemon
import AccessJSON
import ControlSocket
import Foundation
import ReaderSimulation
import SiteContract

/// Bytes as a client writes them to the control socket: the server's framing (lines at
/// `\n`, a `\r` before it dropped, 64 KiB at most, UTF-8), the JSON-RPC request, and each
/// method's params with the checks the daemon makes on them.
enum ControlRequestHarness {
    static func run(_ bytes: [UInt8]) {
        for var line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).prefix(64) {
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            guard line.count <= ControlServer.maximumLineLength, let text = String(validating: line, as: UTF8.self)
            else {
                continue
            }
            switch RPCRequest.parse(text) {
            case .failure(let failure):
                answerIsJSON(RPCRequest.errorResponse(id: failure.id, error: failure.error))
            case .success(let request):
                require(
                    (try? JSONValue.parse(request.params.jsonText)) == request.params, "params survive a round trip")
                guard let method = ControlMethod(rawValue: request.method) else { continue }
                do throws(RPCError) {
                    try checkParams(method, request.params)
                } catch {
                    answerIsJSON(RPCRequest.errorResponse(id: request.id, error: error))
                }
            }
        }
    }

    /// One MQTT command message: refused with a one-line JSON answer, or a request for an
    /// allowed method whose params pass or fail that method's checks.
    static func runMQTTCommand(_ bytes: [UInt8]) {
        switch MQTTCommands.screen(bytes, oversized: false) {
        case .refused(let answer):
            answerIsJSON(answer.jsonText)
        case .run(let request):
            require(MQTTCommands.defaultMethods.contains(request.method), "only allowed methods run: \(request.method)")
            require(bytes.count <= 4096, "a command over 4096 bytes ran")
            guard let method = ControlMethod(rawValue: request.method) else { return }
            do throws(RPCError) {
                try checkParams(method, request.params)
            } catch {
                answerIsJSON(RPCRequest.errorResponse(id: request.id, error: error))
            }
        }
    }

    /// Every answer accessd writes is one line of JSON, whatever the request held.
    private static func answerIsJSON(_ line: String) {
        require(!line.contains("\n"), "an answer is one line")
        require((try? JSONValue.parse(line)) != nil, "an answer is JSON: \(line)")
    }

    private static func checkParams(_ method: ControlMethod, _ params: JSONValue) throws(RPCError) {
        switch method {
        case .statusGet, .readersList, .readersGetScope, .accessCancel, .eventsUnsubscribe, .credentialsList,
            .itemsSync, .itemsList, .secondFactorList, .diagnosticsCollect:
            _ = try params.decode(NoParams.self)
        case .eventsSubscribe: _ = try params.decode(SubscribeParams.self)
        case .readersProbe: _ = ReaderID(try params.decode(ProbeParams.self).reader)
        case .scanningSet, .automaticAccessSet: _ = try params.decode(SwitchParams.self)
        case .logSetLevel: _ = try params.decode(LogLevelParams.self)
        case .accessRequest, .actionsList: _ = ReaderID(try params.decode(ReaderParams.self).reader)
        case .actionsPerform:
            let action = try params.decode(ActionParams.self)
            _ = (ReaderID(action.reader), Int8(exactly: action.action))
        case .secondFactorRespond: _ = try? PIN.validate(try params.decode(PinParams.self).pin)
        case .credentialsRegister:
            let register = try params.decode(RegisterParams.self)
            if let url = register.url { _ = try? SiteAddress.parseInvitation(url) }
            if let host = register.host { _ = try? SiteAddress.parseHost(host) }
            if let code = register.code { _ = try? InvitationCode(code) }
            if let pin = register.pin { _ = try? PIN.validate(pin) }
        case .credentialsDelete: _ = try params.decode(DeleteParams.self)
        case .secondFactorCancel: _ = try params.decode(RequestParams.self)
        case .credentialsSetPin: _ = try params.decode(SetPinParams.self)
        case .credentialsUnlock: _ = try params.decode(CredentialIDParams.self)
        case .credentialsSetPriority: _ = try params.decode(PriorityParams.self)
        case .accessNext: _ = try params.decode(OpenNextParams.self)
        case .readersSetScope: _ = try ReaderScopeCalls.rule(from: try params.decode(ReaderRuleInfo.self))
        case .readersResetScope: _ = try params.decode(ResetScopeParams.self).reader.map { ReaderID($0) }
        }
    }
}

/// A site's answer to each call: status and body, read as `SiteClient` reads them.
enum SiteAnswerHarness {
    private struct Empty: Codable, Sendable {}
    private static let statuses = [200, 201, 204, 299, 400, 401, 403, 404, 409, 410, 429, 500, 503]
    /// 2026-11-24: a clock as the kiosk's shows (the site's `serverTime` is the outside input).
    private static let now: Int64 = 1_795_500_000

    static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let call = input.byte() % 7
        let status = statuses[Int(input.byte()) % statuses.count]
        let firstAttempt = input.byte() & 1 == 0
        let body = input.rest()
        do throws(SiteError) {
            let data = try SiteAnswers.body(body)
            switch call {
            case 0:
                if case .answer(let answer) = try SiteAnswers.read(
                    RegistrationAnswer.self, status: status, body: data,
                    firstAttempt: firstAttempt, now: now)
                {
                    _ = try SiteAnswers.registration(answer)
                }
            case 1:
                _ = try SiteAnswers.read(
                    CredentialStatusAnswer.self, status: status, body: data, firstAttempt: firstAttempt, now: now)
            case 2:
                if case .answer(let answer) = try SiteAnswers.read(
                    ItemPageAnswer.self, status: status, body: data,
                    firstAttempt: firstAttempt, now: now)
                {
                    let page = try SiteAnswers.itemPage(answer, credential: FuzzKeys.credentialID)
                    require(
                        page.items.allSatisfy { $0.data.map { (try? JSONValue.parse($0)) != nil } ?? true },
                        "stored item data is JSON accessd can read back")
                }
            case 3:
                _ = try SiteAnswers.read(
                    ChangesAnswer.self, status: status, body: data, firstAttempt: firstAttempt, now: now)
            case 4:
                _ = try SiteAnswers.read(
                    AuditUploadAnswer.self, status: status, body: data, firstAttempt: firstAttempt, now: now)
            case 5:
                // A reader controller's provisioning page (site API §7): validated whole, then applied.
                if case .answer(let answer) = try SiteAnswers.read(
                    ProvisioningPage.self, status: status, body: data,
                    firstAttempt: firstAttempt, now: now)
                {
                    do {
                        var state = ReaderProvisioningState()
                        try state.apply(try answer.validated())
                        // An empty store takes any site; each of its items has one record at most.
                        require(state.aperioRecords(at: now).count <= state.aperio.count, "one record per item")
                    } catch {
                        require(!error.description.isEmpty, "a refused page says why")
                    }
                }
            default:
                _ = try SiteAnswers.read(Empty.self, status: status, body: data, firstAttempt: firstAttempt, now: now)
            }
        } catch {
            require(!error.description.isEmpty, "a refusal says why")
        }
    }
}

/// accessd.toml and readersim's reader file, from the file's bytes.
enum ConfigurationHarness {
    static func run(_ bytes: [UInt8]) {
        do {
            _ = try ConfigurationLoader.parse(bytes: bytes, file: "fuzz.toml")
        } catch {
            refusalIsWellFormed(line: error.line, reason: error.reason)
        }
    }

    static func runReadersim(_ bytes: [UInt8]) {
        do {
            _ = try SimulatedReadersFile.parse(bytes: bytes, file: "fuzz.toml")
        } catch {
            refusalIsWellFormed(line: error.line, reason: error.reason)
        }
    }

    private static func refusalIsWellFormed(line: Int?, reason: String) {
        require(line.map { $0 >= 1 } ?? true, "a line number counts from 1")
        require(!reason.isEmpty, "a refusal says why")
    }
}

/// What an admin pastes (invitation URL, host, code) and what a site reads (the signed
/// request's Authorization header).
enum InvitationHarness {
    static func run(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        if let (address, code) = try? SiteAddress.parseInvitation(text) {
            require((try? InvitationCode(code.canonical)) == code, "a canonical code parses to itself")
            require(
                (try? SiteAddress.parseHost(address.description)) == address, "an address parses back from its text")
        }
        if let address = try? SiteAddress.parseHost(text) {
            require(
                (try? SiteAddress.parseHost(address.description)) == address, "an address parses back from its text")
        }
        if let code = try? InvitationCode(text) {
            require((try? InvitationCode(code.description)) == code, "a code parses back from its grouped form")
        }
        if let authorization = SiteRequestAuthorization(headerValue: text) {
            require(
                SiteRequestAuthorization(headerValue: authorization.headerValue) == authorization,
                "an Authorization header parses back from its text")
        }
    }
}
