import AccessJSON

/// A JSON-RPC 2.0 error with a stable code (docs/protocol.md lists them).
public struct RPCError: Error, Hashable, Sendable {
    public var code: Int
    public var message: String
    public var data: JSONValue?

    public init(code: Int, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    // JSON-RPC 2.0's own.
    public static func parseError(_ detail: String) -> RPCError {
        RPCError(code: -32700, message: "parse error: \(detail)")
    }
    public static func invalidRequest(_ detail: String) -> RPCError {
        RPCError(code: -32600, message: "invalid request: \(detail)")
    }
    public static func methodNotFound(_ method: String) -> RPCError {
        RPCError(code: -32601, message: "method not found: \(method)")
    }
    public static let invalidParamsCode = -32602
    public static func invalidParams(_ detail: String) -> RPCError {
        RPCError(code: invalidParamsCode, message: "invalid params: \(detail)")
    }
    public static func internalError(_ detail: String) -> RPCError {
        RPCError(code: -32603, message: "internal error: \(detail)")
    }

    // accessd's, -32000 … -32099.
    public static let forbiddenCode = -32001
    public static func forbidden(needs role: Role) -> RPCError {
        RPCError(
            code: forbiddenCode, message: "forbidden: needs the \(role) role",
            data: ["needs": .string(role.description)])
    }
    public static let lineTooLong = RPCError(code: -32002, message: "request line too long")
    public static let tooManyPending = RPCError(code: -32003, message: "too many requests waiting for their answers")
    /// Refused before parsing: deeper than any request needs, and costly to decode.
    public static func tooDeep(_ error: JSONTooDeep) -> RPCError {
        RPCError(code: -32004, message: "request \(error)", data: ["limit": .int(Int64(error.limit))])
    }
    public static func tooManyClients(_ limit: Int) -> RPCError {
        RPCError(
            code: -32005, message: "too many clients (\(limit)); try again later", data: ["limit": .int(Int64(limit))])
    }
    public static func idle(_ timeout: Duration) -> RPCError {
        RPCError(
            code: -32006, message: "closed after \(timeout.components.seconds) s without a request",
            data: ["seconds": .int(timeout.components.seconds)])
    }
    /// accessd refused the connection itself (too many requests waiting, too many clients,
    /// idle too long) and hangs up: a busy daemon, not a dead one; try again.
    public var refusesTheConnection: Bool { [-32003, -32005, -32006].contains(code) }

    /// The operation failed for a reason of the domain: `data.error` holds the stable name
    /// (e.g. a ReaderConnectionError such as `readerUnavailable`).
    public static func failed(_ error: String, _ message: String, details: [String: JSONValue] = [:]) -> RPCError {
        RPCError(
            code: -32010, message: message,
            data: .object(details.merging(["error": .string(error)]) { _, name in name }))
    }
}

/// Who a client is, from its peer credentials (SO_PEERCRED).
public enum Role: Int, Comparable, Sendable, CustomStringConvertible {
    /// May read status and readers, and subscribe to events.
    case observer = 0
    /// May also trigger access and actions and change settings.
    case `operator` = 1
    /// May also manage credentials (root, the daemon's own user, the admin group).
    case admin = 2

    public static func < (lhs: Role, rhs: Role) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String {
        switch self {
        case .observer: "observer"
        case .operator: "operator"
        case .admin: "admin"
        }
    }
}

/// A parsed request line.
public struct RPCRequest: Sendable {
    public var id: JSONValue?
    public var method: String
    public var params: JSONValue

    /// A line that is not a valid request, with the request's id when one could be read.
    public struct Failure: Error, Sendable {
        public var id: JSONValue?
        public var error: RPCError
    }

    /// Parses one line; the error carries the id when one could be read.
    public static func parse(_ line: String) -> Result<RPCRequest, Failure> {
        let value: JSONValue
        do {
            value = try JSONValue.parse(line)
        } catch let error as JSONTooDeep {
            return .failure(Failure(id: nil, error: .tooDeep(error)))
        } catch {
            return .failure(Failure(id: nil, error: .parseError("not JSON")))
        }
        guard case .object(let members) = value else {
            return .failure(Failure(id: nil, error: .invalidRequest("not an object")))
        }
        let id = members["id"]
        if let id {
            switch id {
            case .string, .int, .null: break
            default: return .failure(Failure(id: nil, error: .invalidRequest("id must be a string or an integer")))
            }
        }
        guard members["jsonrpc"] == "2.0" else {
            return .failure(Failure(id: id, error: .invalidRequest("jsonrpc must be \"2.0\"")))
        }
        guard let method = members["method"]?.string, !method.isEmpty else {
            return .failure(Failure(id: id, error: .invalidRequest("method must be a non-empty string")))
        }
        let params = members["params"] ?? .object([:])
        guard case .object = params else {
            return .failure(Failure(id: id, error: .invalidParams("params must be an object")))
        }
        return .success(RPCRequest(id: id, method: method, params: params))
    }

    public static func response(id: JSONValue?, result: JSONValue) -> String {
        responseValue(id: id, result: result).jsonText
    }

    public static func errorResponse(id: JSONValue?, error: RPCError) -> String {
        errorResponseValue(id: id, error: error).jsonText
    }

    /// The answer as a value, for a caller that adds members before sending it (the MQTT
    /// command topic's `origin`).
    public static func responseValue(id: JSONValue?, result: JSONValue) -> JSONValue {
        ["jsonrpc": "2.0", "id": id ?? .null, "result": result]
    }

    public static func errorResponseValue(id: JSONValue?, error: RPCError) -> JSONValue {
        var body: [String: JSONValue] = ["code": .int(Int64(error.code)), "message": .string(error.message)]
        if let data = error.data { body["data"] = data }
        return ["jsonrpc": "2.0", "id": id ?? .null, "error": .object(body)]
    }

    /// The notification that carries a journal event, and the one that stands for events a
    /// subscriber's queue could not hold (docs/protocol.md, `events.subscribe`).
    public static let eventMethod = "event"
    public static let eventsDroppedMethod = "events.dropped"

    /// An event as the socket sends it: `params: {seq, time, kind, data}`.
    public static func eventNotification(sequence: Int64, time: Double, kind: String, data: JSONValue) -> String {
        notification(method: eventMethod, params: eventParams(sequence: sequence, time: time, kind: kind, data: data))
    }

    /// An event's `{seq, time, kind, data}`, as the socket's notification and the MQTT
    /// bridge's messages carry it.
    public static func eventParams(sequence: Int64, time: Double, kind: String, data: JSONValue) -> JSONValue {
        ["seq": .int(sequence), "time": .double(time), "kind": .string(kind), "data": data]
    }

    public static func notification(method: String, params: JSONValue) -> String {
        JSONValue.object(["jsonrpc": "2.0", "method": .string(method), "params": params]).jsonText
    }
}
