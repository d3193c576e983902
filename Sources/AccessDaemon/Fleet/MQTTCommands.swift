import AccessJSON
import ControlSocket
import Logging
import NIOConcurrencyHelpers

/// The command topic (docs/fleet.md, "Commands"), off unless `[mqtt] commands` lists methods
/// (`true`: `access.request`, `access.next` and `scanning.set`), which the configuration allows
/// only over `mqtts://` with a username or a client certificate, and an administrator's method
/// only with a client certificate: a JSON-RPC request on `<prefix>/<device>/commands` for a
/// listed method runs on the socket's handlers (as an administrator when the list holds an
/// administrator's method, else as an operator), and its answer goes to `…/commands/result`.
/// A request is at most 4 KiB (larger ones are refused unread) and nested at most as deep as
/// the socket allows; at most four run at once, the rest are answered `busy`, so a flood from
/// the broker cannot queue work in accessd. A PIN never travels: `credentials.register` with a
/// `pin` is refused, and the methods that carry PINs or streams are never taken.
/// `diagnostics.collect`'s bundle (up to 64 KiB) goes to `<prefix>/<device>/diagnostics`, and
/// its answer says where and how big.
///
/// Who sent a command: MQTT does not tell a subscriber who published. A publisher that sends
/// to `<prefix>/<device>/commands/from/<its name>` names itself, and the broker's ACL (one
/// `topic write accessd/+/commands/from/<name>` per operator, config/mosquitto-accessd.example.acl)
/// is what makes the name true; the bare command topic's commands come from "someone the broker
/// let publish there". Either way the origin is in the answer (`origin`) and in the journal
/// (one entry per command: method, id, origin, result).
public final class MQTTCommands: Sendable {
    typealias Handler = @Sendable (RPCRequest) async -> Result<JSONValue, RPCError>

    /// `commands = true`: what an operator at a door needs.
    public static let defaultMethods: [String] = ["access.next", "access.request", "scanning.set"]
    /// What no configuration can list, and why.
    public static let neverTaken: [ControlMethod: String] = [
        .eventsSubscribe: "a stream, not a command (the kiosk publishes its events already)",
        .eventsUnsubscribe: "a stream, not a command (the kiosk publishes its events already)",
        .secondFactorRespond: "it carries a PIN, which would sit in the broker",
        .credentialsSetPin: "it carries PINs, which would sit in the broker",
        .readersProbe: "it holds the command topic for a minute; run it at the kiosk",
    ]
    /// What a configuration may list.
    public static var takeable: [ControlMethod] { ControlMethod.allCases.filter { neverTaken[$0] == nil } }
    static let maximumInFlight = 4

    let topic: String
    /// The per-publisher topics: `<topic>/from/<publisher>`.
    var attestedFilter: String { topic + "/from/+" }
    /// The methods listed in `[mqtt] commands`.
    let allowed: [String]
    var resultTopic: String { topic + "/result" }
    /// Where `diagnostics.collect` publishes its bundle.
    let diagnosticsTopic: String
    /// Who a command runs as on the socket's handlers.
    var callerRole: Role { allowed.contains { ControlMethod(rawValue: $0)?.role == .admin } ? .admin : .operator }
    private let handler = NIOLockedValueBox<Handler?>(nil)
    private let inFlight = NIOLockedValueBox(0)
    let logger: Logger

    init(
        topic: String, allowed: [String] = MQTTCommands.defaultMethods, diagnosticsTopic: String,
        logger: Logger = Logger(label: "accessd.mqtt")
    ) {
        self.topic = topic
        self.allowed = allowed
        self.diagnosticsTopic = diagnosticsTopic
        self.logger = logger
    }

    /// Where a command came from, as its topic says.
    enum Origin: Equatable, Sendable {
        /// The bare command topic: whoever the broker let publish there.
        case commandTopic
        /// `…/commands/from/<publisher>`: the publisher the broker's ACL lets write there.
        case publisher(String)

        var json: JSONValue {
            switch self {
            case .commandTopic: .object(["via": "mqtt"])
            case .publisher(let name): .object(["via": "mqtt", "publisher": .string(name)])
            }
        }

        var text: String {
            switch self {
            case .commandTopic: "mqtt (the command topic)"
            case .publisher(let name): "mqtt publisher \(name)"
            }
        }
    }

    /// The origin of a message on `topic`, or nil when the topic is not a command topic.
    func origin(ofTopic topic: String) -> Origin? {
        if topic == self.topic { return .commandTopic }
        let prefix = self.topic + "/from/"
        guard topic.hasPrefix(prefix) else { return nil }
        let name = topic.dropFirst(prefix.count)
        guard !name.isEmpty, name.utf8.count <= 128, !name.contains("/") else { return nil }
        return .publisher(String(name))
    }

    /// One message a command publishes (not retained).
    struct Outgoing: Sendable {
        var topic: String
        var text: String
    }

    /// Where commands go: the socket's handlers, as an operator (set once the daemon is built).
    func setHandler(_ handler: @escaping Handler) {
        self.handler.withLockedValue { $0 = handler }
    }

    /// What a message on the command topic is, before anything runs.
    public enum Screened: Sendable {
        /// A request for one of the allowed methods.
        case run(RPCRequest)
        /// Refused: the JSON-RPC answer.
        case refused(JSONValue)
    }

    /// The message's checks in order (size, UTF-8, JSON-RPC, the allow-list); the fuzz
    /// harness `mqtt-command` drives this with any bytes.
    public static func screen(_ payload: [UInt8], oversized: Bool, allowed: [String] = defaultMethods) -> Screened {
        guard !oversized, payload.count <= MosquittoClient.maximumMessage else {
            return .refused(
                RPCRequest.errorResponseValue(
                    id: nil, error: .invalidRequest("a command is at most \(MosquittoClient.maximumMessage) bytes")))
        }
        guard let text = String(validating: payload, as: UTF8.self) else {
            return .refused(RPCRequest.errorResponseValue(id: nil, error: .parseError("not UTF-8")))
        }
        let request: RPCRequest
        switch RPCRequest.parse(text) {
        case .success(let parsed): request = parsed
        case .failure(let failure): return .refused(RPCRequest.errorResponseValue(id: failure.id, error: failure.error))
        }
        guard allowed.contains(request.method) else {
            return .refused(
                RPCRequest.errorResponseValue(
                    id: request.id,
                    error: RPCError(
                        code: -32601,
                        message: "\(request.method) is not taken over MQTT (only \(allowed.joined(separator: ", ")))")))
        }
        if request.method == ControlMethod.credentialsRegister.rawValue, request.params["pin"] != nil {
            return .refused(
                RPCRequest.errorResponseValue(
                    id: request.id,
                    error: .invalidParams("a PIN never goes over MQTT: register a second factor at the kiosk")))
        }
        return .run(request)
    }

    /// One message on a command topic, from `origin`; `send` gets what it publishes, in order,
    /// now or when the command ends: the JSON-RPC answer (on the result topic, with the
    /// command's `origin`) last.
    func receive(
        _ payload: [UInt8], oversized: Bool, from origin: Origin = .commandTopic,
        send: @escaping @Sendable (Outgoing) -> Void
    ) {
        let resultTopic = self.resultTopic
        let logger = self.logger
        let answer: @Sendable (JSONValue, String?) -> Void = { response, method in
            var message = response
            if case .object(var members) = message {
                members["origin"] = origin.json
                message = .object(members)
            }
            let result = response["error"]?["code"]?.int.map { "error \($0)" } ?? "ok"
            logger.notice(
                "MQTT command answered",
                metadata: [
                    "origin": "\(origin.text)", "method": "\(method ?? "-")",
                    "id": "\(response["id"]?.jsonText ?? "null")", "result": "\(result)",
                ])
            send(Outgoing(topic: resultTopic, text: message.jsonText))
        }
        let request: RPCRequest
        switch Self.screen(payload, oversized: oversized, allowed: allowed) {
        case .run(let screened): request = screened
        case .refused(let refusal):
            // The method it named, when it named one (for the journal; it stays refused).
            let named =
                payload.count <= MosquittoClient.maximumMessage
                ? (try? JSONValue.parse(String(decoding: payload, as: UTF8.self)))?["method"]?.string : nil
            answer(refusal, named.map { String($0.prefix(64)) })
            return
        }
        let method = request.method
        func fail(_ error: RPCError) {
            answer(RPCRequest.errorResponseValue(id: request.id, error: error), method)
        }
        guard let handler = handler.withLockedValue({ $0 }) else {
            return fail(RPCError(code: -32603, message: "accessd is starting"))
        }
        let admitted = inFlight.withLockedValue { count in
            guard count < Self.maximumInFlight else { return false }
            count += 1
            return true
        }
        guard admitted else {
            return fail(RPCError(code: -32005, message: "busy: \(Self.maximumInFlight) commands are already running"))
        }
        let inFlight = self.inFlight
        let diagnosticsTopic = self.diagnosticsTopic
        Task {
            var result = await handler(request)
            if method == ControlMethod.diagnosticsCollect.rawValue, case .success(let bundle) = result {
                // The bundle on a topic of its own, the answer small: a fleet tool waiting on the
                // result topic learns where to fetch it.
                let text = bundle.jsonText
                send(Outgoing(topic: diagnosticsTopic, text: text))
                result = .success(.object(["topic": .string(diagnosticsTopic), "bytes": .int(Int64(text.utf8.count))]))
            }
            inFlight.withLockedValue { $0 -= 1 }
            // A request without an id is a notification: run, never answered (JSON-RPC 2.0
            // §4.1, as on the socket; issue #33 found it answered over MQTT).
            guard request.id != nil else { return }
            switch result {
            case .success(let value):
                answer(RPCRequest.responseValue(id: request.id, result: value), method)
            case .failure(let error): fail(error)
            }
        }
    }
}
