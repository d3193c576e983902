import CMosquitto
import Dispatch
import FoundationEssentials
import Glibc
import NIOConcurrencyHelpers

/// libmosquitto (the Eclipse Mosquitto project's own client, Debian's libmosquitto1) behind
/// a small Swift face: one handle, its network thread (`mosquitto_loop_start`), and its
/// callbacks turned into an `AsyncStream`. Connecting again is the caller's, with a new
/// client: libmosquitto 2.0's thread does not retry a first attempt that failed (measured: a
/// broker started 3 s after accessd was never reached), and it ends without a word on a TLS
/// error after a link went (measured: a broker SIGKILLed mid-TLS-link, OpenSSL's
/// "unexpected eof while reading").
/// Why libmosquitto rather than an MQTT client written here: the broker's own library
/// speaks MQTT 3.1.1 and 5, TLS and the session rules as the broker expects them, and is
/// packaged for the kiosks this runs on; accessd writes only the bridge's logic (`MQTTBridge`).
/// It is loaded when the first client is made (`MosquittoLibrary`), not at every start.
final class MosquittoClient: Sendable {
    enum Event: Sendable, Equatable {
        /// CONNACK: `code` 0 is accepted, else the broker's refusal (`reason`).
        case connected(code: Int32, reason: String)
        /// The link went; `code` 0 when we asked.
        case disconnected(code: Int32, reason: String)
        /// The broker acknowledged a QoS 1 message (PUBACK), or a QoS 0 one was written.
        case published(messageID: Int32)
        /// A message on a topic subscribed to (the command topic); `oversized` when its
        /// payload passed `maximumMessage` and was not kept.
        case message(topic: String, payload: [UInt8], oversized: Bool)
        /// libmosquitto logged an error (a TLS verification failure among them, after which
        /// its thread gives up without a callback: the caller starts over).
        case error(String)
    }

    struct Settings: Sendable {
        var host: String
        var port: Int32
        var clientID: String
        var keepAlive: Int32 = 30
        var username: String?
        var password: String?
        var caFile: String?
        var certFile: String?
        var keyFile: String?
        var will: (topic: String, payload: [UInt8])?
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Where the C callbacks find the stream and the library (passed as libmosquitto's `obj`).
    private final class Sink: Sendable {
        let continuation: AsyncStream<Event>.Continuation
        let library: MosquittoLibrary
        /// The last error libmosquitto logged: the detail behind "A TLS error occurred."
        let lastError = NIOLockedValueBox<String?>(nil)
        /// The link closed (libmosquitto's on_disconnect): after our DISCONNECT, once sent.
        let linkClosed = NIOLockedValueBox(false)
        /// The newest message id the broker acknowledged (QoS 1 PUBACK).
        let lastAcknowledged = NIOLockedValueBox<Int32?>(nil)
        /// Messages handed to the stream and not yet handled, and those dropped at the limit.
        let messages = NIOLockedValueBox((queued: 0, dropped: 0))
        init(_ continuation: AsyncStream<Event>.Continuation, library: MosquittoLibrary) {
            self.continuation = continuation
            self.library = library
        }
    }

    // libmosquitto's handle is safe to use from any thread once its loop runs in its own
    // (publish and disconnect are documented thread-safe with mosquitto_loop_start).
    nonisolated(unsafe) private let handle: OpaquePointer
    private let sink: Sink
    private let settings: Settings
    private let started = NIOLockedValueBox(false)
    let events: AsyncStream<Event>

    init(_ settings: Settings) throws(Failure) {
        let library = try MosquittoLibrary.load(MosquittoLibrary.soname)
        let (stream, continuation) = AsyncStream<Event>.makeStream()
        events = stream
        sink = Sink(continuation, library: library)
        self.settings = settings
        guard
            let handle = library.functions.new_client(
                settings.clientID, true, Unmanaged.passUnretained(sink).toOpaque())
        else {
            throw Failure(description: "libmosquitto could not make a client: \(String(cString: strerror(errno)))")
        }
        self.handle = handle
        _ = library.functions.int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, Int32(MQTT_PROTOCOL_V311))
        // A command's answer and each acknowledgement are small packets: with Nagle's algorithm
        // on (libmosquitto's default) they waited for the broker's delayed ACK, 40 ms a round
        // trip (`accessbench fleet-commands`).
        _ = library.functions.int_option(handle, MOSQ_OPT_TCP_NODELAY, 1)
        library.functions.connect_callback_set(handle) { _, object, code in
            guard let object else { return }
            let sink = Unmanaged<Sink>.fromOpaque(object).takeUnretainedValue()
            sink.continuation.yield(
                .connected(code: code, reason: String(cString: sink.library.functions.connack_string(code))))
        }
        library.functions.disconnect_callback_set(handle) { _, object, code in
            guard let object else { return }
            let sink = Unmanaged<Sink>.fromOpaque(object).takeUnretainedValue()
            sink.linkClosed.withLockedValue { $0 = true }
            sink.continuation.yield(
                .disconnected(code: code, reason: String(cString: sink.library.functions.strerror(code))))
        }
        library.functions.publish_callback_set(handle) { _, object, messageID in
            guard let object else { return }
            let sink = Unmanaged<Sink>.fromOpaque(object).takeUnretainedValue()
            sink.lastAcknowledged.withLockedValue { $0 = messageID }
            sink.continuation.yield(.published(messageID: messageID))
        }
        library.functions.message_callback_set(handle) { _, object, message in
            guard let object, let message else { return }
            let sink = Unmanaged<Sink>.fromOpaque(object).takeUnretainedValue()
            // A flood is dropped here, before anything is copied: at most `messageQueueLimit`
            // messages wait in accessd (issue #33: 50,000 commands grew RSS by 190 MB).
            let admitted = sink.messages.withLockedValue { messages in
                guard messages.queued < MosquittoClient.messageQueueLimit else {
                    messages.dropped += 1
                    return false
                }
                messages.queued += 1
                return true
            }
            guard admitted else { return }
            let topic = message.pointee.topic.map { String(cString: $0) } ?? ""
            let length = Int(message.pointee.payloadlen)
            guard length <= MosquittoClient.maximumMessage else {
                sink.continuation.yield(.message(topic: topic, payload: [], oversized: true))
                return
            }
            let payload = message.pointee.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: length)) } ?? []
            sink.continuation.yield(.message(topic: topic, payload: payload, oversized: false))
        }
        library.functions.log_callback_set(handle) { _, object, level, text in
            guard let object, let text, level & Int32(MOSQ_LOG_ERR) != 0 else { return }
            let sink = Unmanaged<Sink>.fromOpaque(object).takeUnretainedValue()
            let message = String(cString: text)
            sink.lastError.withLockedValue { $0 = message }
            sink.continuation.yield(.error(message))
        }
        do {
            if let username = settings.username {
                try check(library.functions.username_pw_set(handle, username, settings.password), "the username")
            }
            if settings.caFile != nil || settings.certFile != nil {
                try check(
                    library.functions.tls_set(handle, settings.caFile, nil, settings.certFile, settings.keyFile, nil),
                    "TLS")
            }
            if let will = settings.will {
                try check(
                    will.payload.withUnsafeBytes {
                        library.functions.will_set(handle, will.topic, Int32($0.count), $0.baseAddress, 1, true)
                    }, "the last will")
            }
        } catch {
            library.functions.destroy(handle)
            throw error
        }
    }

    /// The library's functions (the sink holds the library, for the C callbacks too).
    private var functions: accessd_mosquitto { sink.library.functions }

    /// One attempt at the first connection (TCP, and TLS's handshake starts), off the
    /// caller's thread since it blocks; on success the network thread takes over, CONNACK
    /// included. The reason when it failed.
    func connect() async -> String? {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { [self] in
                let code = functions.connect_async(handle, settings.host, settings.port, settings.keepAlive)
                guard code == MOSQ_ERR_SUCCESS.rawValue else {
                    var reason =
                        code == MOSQ_ERR_ERRNO.rawValue
                        ? String(cString: strerror(errno))
                        : String(cString: functions.strerror(code))
                    if let detail = sink.lastError.withLockedValue({ $0 }) { reason += " (\(detail))" }
                    continuation.resume(returning: reason)
                    return
                }
                let loop = functions.loop_start(handle)
                started.withLockedValue { $0 = loop == MOSQ_ERR_SUCCESS.rawValue }
                continuation.resume(
                    returning: loop == MOSQ_ERR_SUCCESS.rawValue
                        ? nil
                        : "libmosquitto's network thread: \(String(cString: functions.strerror(loop)))")
            }
        }
    }

    private func check(_ code: Int32, _ what: String) throws(Failure) {
        guard code == MOSQ_ERR_SUCCESS.rawValue else {
            throw Failure(description: "libmosquitto refused \(what): \(String(cString: functions.strerror(code)))")
        }
    }

    /// Commands are small: a larger payload is refused without being copied.
    static let maximumMessage = 4096

    /// Messages that may wait in accessd, received and not yet handled; more are dropped.
    static let messageQueueLimit = 64

    /// A `.message` was handled: room for the next.
    func messageHandled() {
        sink.messages.withLockedValue { $0.queued = max(0, $0.queued - 1) }
    }

    /// Messages dropped since this client started because `messageQueueLimit` waited.
    var droppedMessages: Int { sink.messages.withLockedValue { $0.dropped } }

    /// Subscribes to `topic` (QoS 1); messages come as `.message`.
    func subscribe(_ topic: String) throws(Failure) {
        try check(functions.subscribe(handle, nil, topic, 1), "a subscription to \(topic)")
    }

    /// Queues a message; its id comes back in `.published` when the broker has it (QoS 1).
    func publish(topic: String, payload: [UInt8], qos: Int32, retain: Bool) throws(Failure) -> Int32 {
        var messageID: Int32 = 0
        let code = payload.withUnsafeBytes {
            functions.publish(handle, &messageID, topic, Int32($0.count), $0.baseAddress, qos, retain)
        }
        try check(code, "a message to \(topic)")
        return messageID
    }

    /// A clean end: DISCONNECT (so the broker sends no will), then the network thread stopped.
    /// `lastMessage`: a QoS 1 message published just before (the bridge's `offline`), whose
    /// acknowledgement is waited for first, 2 s at most. Measured: disconnecting while its
    /// PUBACK was still on its way closed the socket with unread data, so the kernel reset
    /// the connection and the broker lost the DISCONNECT it had not read yet ("closed its
    /// connection", and the will; in about one stop in two with the host suite's load). The
    /// thread is stopped once it has sent the DISCONNECT and closed the link (on_disconnect).
    func close(after lastMessage: Int32? = nil) async {
        if started.withLockedValue({ $0 }) {
            let sink = sink
            if let lastMessage {
                // Detached: the caller is often a cancelled task, whose sleeps return at once.
                await Task.detached {
                    for _ in 0..<200 where sink.lastAcknowledged.withLockedValue({ $0 }) != lastMessage {
                        try? await Task.sleep(for: .milliseconds(10))
                    }
                }.value
            }
            if functions.disconnect(handle) == MOSQ_ERR_SUCCESS.rawValue {
                await Task.detached {
                    for _ in 0..<200 where !sink.linkClosed.withLockedValue({ $0 }) {
                        try? await Task.sleep(for: .milliseconds(10))
                    }
                }.value
            }
            _ = functions.loop_stop(handle, false)
        }
        sink.continuation.finish()
    }

    deinit {
        functions.destroy(handle)
    }
}

/// libmosquitto.so.1's functions (Sources/CMosquitto/include/mosquitto_library.h), loaded by
/// the first client and kept; a kiosk without the fleet bridge never maps the library (nor the
/// OpenSSL it brings).
struct MosquittoLibrary: Sendable {
    static let soname = "libmosquitto.so.1"

    /// C function pointers, set once and only read (Sendable as imported).
    let functions: accessd_mosquitto

    private static let libraries = NIOLockedValueBox<[String: MosquittoLibrary]>([:])

    /// The library `name`, loaded and initialised (`mosquitto_lib_init`) the first time.
    static func load(_ name: String) throws(MosquittoClient.Failure) -> MosquittoLibrary {
        let result = libraries.withLockedValue { libraries -> Result<MosquittoLibrary, MosquittoClient.Failure> in
            if let library = libraries[name] { return .success(library) }
            var reason = [CChar](repeating: 0, count: 512)
            // The C side fills the table only when it returns 0 (its fields cannot be nil).
            let loaded = withUnsafeTemporaryAllocation(of: accessd_mosquitto.self, capacity: 1) { table in
                accessd_mosquitto_load(name, table.baseAddress!, &reason, UInt(reason.count)) == 0
                    ? table.baseAddress!.pointee : nil
            }
            guard let functions = loaded else {
                let detail = reason.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
                return .failure(
                    .init(description: "cannot load libmosquitto (Debian package libmosquitto1): \(detail)"))
            }
            _ = functions.lib_init()
            let library = MosquittoLibrary(functions: functions)
            libraries[name] = library
            return .success(library)
        }
        return try result.get()
    }
}
