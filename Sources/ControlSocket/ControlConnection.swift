import AccessJSON
import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// A blocking client of the control socket, for `accessctl`, tests and benchmarks: one
/// request at a time, notifications kept in order for `nextNotification`.
public final class ControlConnection {
    public enum Failure: Error, CustomStringConvertible {
        case cannotConnect(path: String, errno: Int32)
        case closed
        case malformed(String)
        /// No answer within `answerTimeout` (accessd stopped, hung, or the exchange longer).
        case timedOut(Duration)

        public var description: String {
            switch self {
            case .cannotConnect(let path, let code): "cannot connect to \(path): \(String(cString: strerror(code)))"
            case .timedOut(let limit): "accessd did not answer within \(limit.components.seconds) s"
            case .closed: "accessd closed the connection"
            case .malformed(let line): "malformed line from accessd: \(line)"
            }
        }
    }

    public let path: String
    /// The socket, for callers that poll many connections at once (benchmarks).
    public let fileDescriptor: Int32
    private var fd: Int32 { fileDescriptor }
    private var buffer: [UInt8] = []
    private var nextID: Int64 = 0
    private var notifications: [JSONValue] = []
    /// How long `call` waits for its answer; nil: as long as it takes.
    public var answerTimeout: Duration?

    public init(path: String) throws(Failure) {
        self.path = path
        // The descriptor becomes a property only once connected: a class whose initializer
        // throws after every property is set is deinitialized, and deinit closing it again
        // closed whatever another thread had opened under the same number meanwhile.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .cannotConnect(path: path, errno: errno) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw .cannotConnect(path: path, errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw .cannotConnect(path: path, errno: code)
        }
        fileDescriptor = fd
    }

    deinit {
        close(fd)
    }

    /// Sends raw bytes (tests use it for malformed input).
    /// Shuts down the sending side (as `echo … | socat` does): the daemon still answers
    /// what was sent.
    public func finishSending() {
        shutdown(fd, Int32(SHUT_WR))
    }

    public func sendRaw(_ text: String) throws(Failure) {
        try sendRaw(bytes: Array(text.utf8))
    }

    public func sendRaw(bytes: [UInt8]) throws(Failure) {
        var bytes = bytes
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes {
                send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { throw .closed }
            offset += written
        }
    }

    /// Calls a method and waits for its answer; notifications that arrive meanwhile are kept,
    /// or given to `onNotification` as they come (an exchange's `secondFactor.required`,
    /// answered before the call ends).
    public func call(
        _ method: ControlMethod, _ params: JSONValue = [:],
        onNotification: ((JSONValue) -> Void)? = nil
    ) throws(Failure) -> Result<JSONValue, RPCError> {
        try call(method.rawValue, params, onNotification: onNotification)
    }

    /// A method by its wire name (tests that send what no table has).
    public func call(
        _ method: String, _ params: JSONValue = [:],
        onNotification: ((JSONValue) -> Void)? = nil
    ) throws(Failure) -> Result<JSONValue, RPCError> {
        nextID += 1
        let id = nextID
        do {
            try sendRaw(
                JSONValue.object(["jsonrpc": "2.0", "id": .int(id), "method": .string(method), "params": params])
                    .jsonText + "\n")
        } catch {
            // accessd may have refused the connection and hung up before the request went out
            // (EPIPE): its refusal is already in the receive queue, and is the answer.
            if let message = try? readMessage(), message["id"] == .null, let refusal = message["error"] {
                return .failure(Self.rpcError(refusal))
            }
            throw error
        }
        let deadline = answerTimeout.map { ContinuousClock.now + $0 }
        while true {
            if let deadline, let answerTimeout, !waitReadable(timeout: max(.zero, deadline - ContinuousClock.now)) {
                throw .timedOut(answerTimeout)
            }
            let message = try readMessage()
            if message["method"] != nil {
                if let onNotification { onNotification(message) } else { notifications.append(message) }
                continue
            }
            // An error with a null id is about the connection, not a request: accessd's
            // refusal (too many clients, idle too long, too many requests waiting) just before
            // it hangs up. It is this call's answer (issue #35: it was skipped, and the
            // hang-up reported as "accessd closed the connection").
            let connectionRefused = message["id"] == .null && message["error"] != nil
            guard message["id"]?.int == id || connectionRefused else { continue }
            if let error = message["error"] { return .failure(Self.rpcError(error)) }
            return .success(message["result"] ?? .null)
        }
    }

    private static func rpcError(_ error: JSONValue) -> RPCError {
        RPCError(code: Int(error["code"]?.int ?? -32603), message: error["message"]?.string ?? "", data: error["data"])
    }

    /// The next notification (`{"method":…, "params":…}`), waiting for it.
    public func nextNotification() throws(Failure) -> JSONValue {
        if !notifications.isEmpty { return notifications.removeFirst() }
        while true {
            let message = try readMessage()
            if message["method"] != nil { return message }
        }
    }

    /// Whether a whole line is already buffered (no read needed).
    public var hasBufferedLine: Bool { !notifications.isEmpty || buffer.contains(UInt8(ascii: "\n")) }

    /// Waits at most `timeout` for readable data; false on timeout.
    public func waitReadable(timeout: Duration) -> Bool {
        if !notifications.isEmpty || buffer.contains(UInt8(ascii: "\n")) { return true }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(
            timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        return poll(&descriptor, 1, milliseconds) > 0
    }

    public func readLine() throws(Failure) -> String {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw .closed }
            buffer += chunk.prefix(count)
        }
    }

    private func readMessage() throws(Failure) -> JSONValue {
        let line = try readLine()
        guard let message = try? JSONValue.parse(line) else { throw .malformed(line) }
        return message
    }
}
