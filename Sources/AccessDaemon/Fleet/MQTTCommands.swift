import AccessJSON
import ControlSocket
import NIOConcurrencyHelpers

/// The command topic (docs/fleet.md, "Commands"), off unless `[mqtt] commands = true`, which
/// the configuration allows only over `mqtts://` with a username or a client certificate:
/// a JSON-RPC request on `<prefix>/<device>/commands` runs as an operator's on the socket,
/// and its answer goes to `…/commands/result`. Only `access.request`, `access.next` and
/// `scanning.set`; a request is at most 4 KiB (larger ones are refused unread) and nested at
/// most as deep as the socket allows; at most four run at once, the rest are answered
/// `busy`, so a flood from the broker cannot queue work in accessd.
public final class MQTTCommands: Sendable {
    typealias Handler = @Sendable (RPCRequest) async -> Result<JSONValue, RPCError>

    public static let allowed: [String] = ["access.next", "access.request", "scanning.set"]
    static let maximumInFlight = 4

    let topic: String
    var resultTopic: String { topic + "/result" }
    private let handler = NIOLockedValueBox<Handler?>(nil)
    private let inFlight = NIOLockedValueBox(0)

    init(topic: String) {
        self.topic = topic
    }

    /// Where commands go: the socket's handlers, as an operator (set once the daemon is built).
    func setHandler(_ handler: @escaping Handler) {
        self.handler.withLockedValue { $0 = handler }
    }

    /// What a message on the command topic is, before anything runs.
    public enum Screened: Sendable {
        /// A request for one of the allowed methods.
        case run(RPCRequest)
        /// Refused: the JSON-RPC answer's text.
        case refused(String)
    }

    /// The message's checks in order (size, UTF-8, JSON-RPC, the allow-list); the fuzz
    /// harness `mqtt-command` drives this with any bytes.
    public static func screen(_ payload: [UInt8], oversized: Bool) -> Screened {
        guard !oversized, payload.count <= MosquittoClient.maximumMessage else {
            return .refused(
                RPCRequest.errorResponse(
                    id: nil, error: .invalidRequest("a command is at most \(MosquittoClient.maximumMessage) bytes")))
        }
        guard let text = String(validating: payload, as: UTF8.self) else {
            return .refused(RPCRequest.errorResponse(id: nil, error: .parseError("not UTF-8")))
        }
        let request: RPCRequest
        switch RPCRequest.parse(text) {
        case .success(let parsed): request = parsed
        case .failure(let failure): return .refused(RPCRequest.errorResponse(id: failure.id, error: failure.error))
        }
        guard allowed.contains(request.method) else {
            return .refused(
                RPCRequest.errorResponse(
                    id: request.id,
                    error: RPCError(
                        code: -32601,
                        message: "\(request.method) is not taken over MQTT (only \(allowed.joined(separator: ", ")))")))
        }
        return .run(request)
    }

    /// One message on the command topic; `answer` gets the JSON-RPC answer's text, now or
    /// when the command ends.
    func receive(_ payload: [UInt8], oversized: Bool, answer: @escaping @Sendable (String) -> Void) {
        let request: RPCRequest
        switch Self.screen(payload, oversized: oversized) {
        case .run(let screened): request = screened
        case .refused(let text):
            answer(text)
            return
        }
        guard let handler = handler.withLockedValue({ $0 }) else {
            answer(
                RPCRequest.errorResponse(id: request.id, error: RPCError(code: -32603, message: "accessd is starting")))
            return
        }
        let admitted = inFlight.withLockedValue { count in
            guard count < Self.maximumInFlight else { return false }
            count += 1
            return true
        }
        guard admitted else {
            answer(
                RPCRequest.errorResponse(
                    id: request.id,
                    error: RPCError(
                        code: -32005, message: "busy: \(Self.maximumInFlight) commands are already running")))
            return
        }
        let inFlight = self.inFlight
        Task {
            let result = await handler(request)
            inFlight.withLockedValue { $0 -= 1 }
            // A request without an id is a notification: run, never answered (JSON-RPC 2.0
            // §4.1, as on the socket; issue #33 found it answered over MQTT).
            guard request.id != nil else { return }
            switch result {
            case .success(let value): answer(RPCRequest.response(id: request.id, result: value))
            case .failure(let error): answer(RPCRequest.errorResponse(id: request.id, error: error))
            }
        }
    }
}
