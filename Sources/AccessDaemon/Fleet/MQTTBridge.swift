import AccessCore
import AccessJSON
import AccessStore
import ControlSocket
import FoundationEssentials
import Glibc
import Logging
import NIOConcurrencyHelpers

/// The fleet bridge (docs/fleet.md): every journal event to an MQTT broker, in order, QoS 1,
/// from a cursor kept in the state database that moves only over events the broker has
/// acknowledged (PUBACK), so that a broker restart, a network loss or a kill of accessd
/// loses nothing: after any of them the bridge publishes again from the cursor (at least
/// once; a consumer deduplicates by `seq`). While the broker is away the events wait in the
/// journal, bounded by its retention; what retention removes unsent is announced on
/// `events/events.dropped`, never skipped silently. Beside the events: a retained `status`
/// (`online`, and `offline` by the broker's last will when accessd dies, or by accessd on a
/// clean stop) and a retained `state` (the SDK state).
struct MQTTBridge: Sendable {
    /// Messages handed to libmosquitto and not yet acknowledged, at most.
    static let window = 100
    static let cursorKey = "mqtt.cursor"

    let configuration: MQTTConfiguration
    let device: String
    let journal: EventJournal
    /// What the retained `state` topic says now (docs/fleet.md).
    let currentState: @Sendable () async -> JSONValue
    let progress: MQTTProgress
    /// The command topic, when `[mqtt] commands` is on.
    let commands: MQTTCommands?
    let logger: Logger

    var store: AccessStore { journal.store }
    var topic: String { "\(configuration.topicPrefix)/\(device)" }

    private enum Input: Sendable {
        /// An event of the `generation`th client: those of a client given up are ignored.
        case mqtt(MosquittoClient.Event, generation: Int)
        case journalled
        case tick
        /// A command's answer, to publish on the result topic.
        case commandAnswer(MQTTCommands.Outgoing)
    }

    /// A client that got no CONNACK in this time is started over.
    static let firstAnswer: Duration = .seconds(15)

    func run() async {
        let settings: MosquittoClient.Settings
        do {
            settings = try self.settings()
        } catch {
            // The rest of accessd goes on; status.get says why the bridge does not.
            logger.error("the MQTT bridge cannot start", metadata: ["error": "\(error)"])
            progress.update {
                $0.state = .failing
                $0.error = "\(error)"
            }
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
            return
        }
        var cursor: Int64
        if let saved = (try? store.setting(Self.cursorKey)).flatMap({ $0.flatMap { Int64($0) } }) {
            cursor = saved
        } else {
            // First start with a broker: from now on (the journal before is history).
            cursor = journal.lastSequence
            try? store.setSetting(Self.cursorKey, String(cursor))
        }
        progress.update {
            $0.through = cursor
            $0.backlog = max(0, journal.lastSequence - cursor)
        }

        let (inputs, feed) = AsyncStream<Input>.makeStream()
        let wakePending = NIOLockedValueBox(false)
        let token = journal.watch(kinds: nil) {
            // One wake is enough however many events came: the bridge reads them all.
            if wakePending.withLockedValue({ pending in
                defer { pending = true }
                return !pending
            }) {
                feed.yield(.journalled)
            }
        }
        defer { journal.unwatch(token) }
        let ticks = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                feed.yield(.tick)
            }
        }
        defer { ticks.cancel() }
        var iterator = inputs.makeAsyncIterator()
        var delay = 1
        var generation = 0
        while !Task.isCancelled {
            generation += 1
            let client: MosquittoClient
            do {
                client = try MosquittoClient(settings)
            } catch {
                progress.update {
                    $0.state = .failing
                    $0.error = "\(error)"
                }
                try? await Task.sleep(for: .seconds(delay))
                delay = min(delay * 2, 30)
                continue
            }
            if let failure = await client.connect() {
                // The first connection of a client (broker down, DNS, TCP refused).
                report("cannot reach the broker: \(failure)", state: .connecting, cursor: cursor)
                await client.close()
                try? await Task.sleep(for: .seconds(delay))
                delay = min(delay * 2, 30)
                continue
            }
            let forward = Task { [generation] in
                for await event in client.events { feed.yield(.mqtt(event, generation: generation)) }
            }
            let ended = await session(
                client, generation: generation, inputs: &iterator, feed: feed,
                wakePending: wakePending, cursor: &cursor)
            forward.cancel()
            if case .stopped(let offline) = ended {
                await client.close(after: offline)
                return
            }
            await client.close()
            switch ended {
            case .stopped:
                return
            case .failed(let reason, let connected):
                report(reason, state: .failing, cursor: cursor)
                if connected { delay = 1 }
                try? await Task.sleep(for: .seconds(delay))
                delay = min(delay * 2, 30)
            case .lost(let reason):
                report(reason, state: .connecting, cursor: cursor)
                delay = 1
                try? await Task.sleep(for: .seconds(delay))
                delay = 2
            }
        }
    }

    private enum SessionEnd {
        /// With the id of the `offline` message published last, when connected.
        case stopped(Int32?)
        /// The client is given up: `connected` when it had been connected (the delay starts over).
        case failed(String, connected: Bool)
        /// The link went after a CONNACK: a new client in 1 s, the delay started over.
        case lost(String)
    }

    /// One client's life: publishes while connected, follows acknowledgements, and ends when
    /// the task is cancelled (after `offline`) or when the client will not get through.
    private func session(
        _ client: MosquittoClient, generation: Int, inputs: inout AsyncStream<Input>.Iterator,
        feed: AsyncStream<Input>.Continuation,
        wakePending: NIOLockedValueBox<Bool>, cursor: inout Int64
    ) async -> SessionEnd {
        var flight: Flight?
        var retained = MQTTRetainedTopics(
            topic: topic,
            discovery: configuration.homeAssistant
                ? HomeAssistantDiscovery(
                    prefix: configuration.discoveryPrefix, device: device, topic: topic,
                    commandTopic: commands?.topic) : nil)
        var everConnected = false
        // The `state` last published on this connection: published again when it differs.
        var publishedState: JSONValue?
        var lastRefusal: String?
        var lastError: String?
        // Messages the client dropped at its limit, as far as reported (a flood is logged once
        // per 10 s, and counted in status.get's mqtt.droppedCommands).
        var droppedReported = 0
        var lastDropLog: ContinuousClock.Instant?
        // Since when the client has waited for its CONNACK.
        var waitingSince: ContinuousClock.Instant? = .now
        while let input = await inputs.next() {
            if case .mqtt(_, let from) = input, from != generation { continue }
            switch input {
            case .journalled:
                wakePending.withLockedValue { $0 = false }
                progress.update { $0.backlog = max(0, journal.lastSequence - cursor) }
            case .tick:
                if flight != nil {
                    publish(client, retained.due(now: .now))
                    // Within a second of any change (adapter, credentials) that no event names.
                    let state = await currentState()
                    if state != publishedState {
                        publishedState = state
                        publishRetained(client, "state", state)
                    }
                }
                if let since = waitingSince, ContinuousClock.now - since > Self.firstAnswer {
                    return .failed(
                        lastError.map { "no answer from the broker: \($0)" } ?? "no answer from the broker",
                        connected: everConnected)
                }
            case .mqtt(.connected(0, _), _):
                logger.notice(
                    "connected to the MQTT broker",
                    metadata: ["broker": "\(progress.status.broker)", "from": "\(cursor)"])
                everConnected = true
                waitingSince = nil
                lastRefusal = nil
                lastError = nil
                progress.update {
                    $0.state = .connected
                    $0.error = nil
                }
                publishRetained(client, "status", await Self.online())
                let state = await currentState()
                publishedState = state
                publishRetained(client, "state", state)
                publish(client, retained.connected())
                if let commands {
                    do {
                        try client.subscribe(commands.topic)
                        try client.subscribe(commands.attestedFilter)
                    } catch {
                        logger.error("the MQTT command topic cannot be subscribed to", metadata: ["error": "\(error)"])
                    }
                }
                // Everything after the cursor again: what was in flight on a lost link may not have arrived.
                flight = Flight(published: cursor)
            case .mqtt(.connected(_, let reason), _):
                if lastRefusal != reason {
                    logger.warning(
                        "the MQTT broker refused the connection; trying again", metadata: ["reason": "\(reason)"])
                }
                lastRefusal = reason
                flight = nil
                progress.update {
                    $0.state = .failing
                    $0.error = "the broker refused the connection: \(reason)"
                }
            case .mqtt(.disconnected(let code, let reason), _):
                // Started over with a new client, never left to libmosquitto's own reconnect:
                // its thread ends on some losses without a word (issue #33: a broker killed
                // mid-TLS-link ends it on OpenSSL's "unexpected eof"; the link came back only
                // after 61.9 s), so one path serves every loss, 1 s doubling to 30 s.
                // A link refused at CONNACK is a failure, retried with a growing delay.
                guard flight != nil else {
                    return .failed(
                        lastRefusal.map { "the broker refused the connection: \($0)" } ?? "the link went: \(reason)",
                        connected: false)
                }
                logger.warning(
                    "the link to the MQTT broker went; events wait in the journal",
                    metadata: ["reason": "\(reason)", "code": "\(code)"])
                let detail = lastError.map { "\(reason) (\($0))" } ?? reason
                return .lost("the link went: \(detail)")
            case .mqtt(.error(let text), _):
                lastError = text
                if flight == nil {
                    // Not connected: a TLS refusal ends libmosquitto's retries; start over now.
                    logger.warning("the MQTT client failed; starting over", metadata: ["error": "\(text)"])
                    return .failed("the client failed: \(text)", connected: everConnected)
                }
            case .mqtt(.message(let topic, let payload, let oversized), _):
                client.messageHandled()
                let dropped = client.droppedMessages
                if dropped > droppedReported {
                    let more = dropped - droppedReported
                    droppedReported = dropped
                    progress.update { $0.droppedCommands = ($0.droppedCommands ?? 0) + more }
                    if lastDropLog.map({ .now - $0 > .seconds(10) }) ?? true {
                        lastDropLog = .now
                        logger.warning(
                            "MQTT messages dropped: more arrived than accessd takes at once",
                            metadata: ["dropped": "\(dropped)", "limit": "\(MosquittoClient.messageQueueLimit)"])
                    }
                }
                guard let commands, let origin = commands.origin(ofTopic: topic) else { continue }
                commands.receive(payload, oversized: oversized, from: origin) { feed.yield(.commandAnswer($0)) }
            case .commandAnswer(let outgoing):
                if flight != nil {
                    _ = try? client.publish(
                        topic: outgoing.topic, payload: Array(outgoing.text.utf8), qos: 1, retain: false)
                }
            case .mqtt(.published(let messageID), _):
                guard var current = flight, let sequence = current.pending.removeValue(forKey: messageID) else {
                    continue
                }
                current.acknowledged.insert(sequence)
                var moved = cursor
                while let first = current.order.first, current.acknowledged.contains(first) {
                    current.order.removeFirst()
                    current.acknowledged.remove(first)
                    moved = first
                }
                flight = current
                if moved > cursor {
                    cursor = moved
                    do {
                        try store.setSetting(Self.cursorKey, String(cursor))
                    } catch {
                        logger.warning(
                            "the MQTT cursor cannot be saved; events may be sent again", metadata: ["error": "\(error)"]
                        )
                    }
                    let through = cursor
                    progress.update {
                        $0.through = through
                        $0.backlog = max(0, journal.lastSequence - through)
                        $0.lastAcknowledgedAt = Clocks.wall()
                    }
                }
            }
            if var current = flight {
                pump(client, &current, &retained)
                flight = current
            }
        }
        // Stopping (the task was cancelled): `offline` then a clean DISCONNECT, in that order
        // on the wire, so the broker keeps `offline` and sends no will.
        guard flight != nil else { return .stopped(nil) }
        return .stopped(
            try? client.publish(
                topic: "\(topic)/status", payload: Array(Self.offline.jsonText.utf8), qos: 1, retain: true))
    }

    private func report(_ reason: String, state: MQTTStatus.State, cursor: Int64) {
        progress.update { status in
            if status.error != reason {
                logger.warning("the MQTT bridge is not connected; trying again", metadata: ["reason": "\(reason)"])
            }
            status.state = state
            status.error = reason
            status.backlog = max(0, journal.lastSequence - cursor)
        }
    }

    /// The retained status at each connection: the binary's version, and the package's
    /// when accessd runs from one (what a fleet's upgrade changes).
    static func online() async -> JSONValue {
        var members: [String: JSONValue] = ["status": "online", "version": .string(AccessDaemon.version)]
        if let package = await InstalledPackage.version() { members["package"] = .string(package) }
        return .object(members)
    }
    static let offline: JSONValue = .object(["status": "offline"])

    /// libmosquitto's settings: the password read now, from a file only accessd may read.
    private func settings() throws -> MosquittoClient.Settings {
        var settings = MosquittoClient.Settings(host: configuration.host, port: configuration.port, clientID: device)
        settings.username = configuration.username
        if let file = configuration.passwordFile {
            var info = stat()
            guard stat(file, &info) == 0 else {
                throw MosquittoClient.Failure(
                    description: "[mqtt] password_file \(file): \(String(cString: strerror(errno)))")
            }
            guard info.st_mode & 0o007 == 0 else {
                throw MosquittoClient.Failure(
                    description: "[mqtt] password_file \(file) is readable by others: chmod 0600 or 0640")
            }
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw MosquittoClient.Failure(description: "[mqtt] password_file \(file) cannot be read")
            }
            settings.password =
                text.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        }
        if configuration.tls {
            // No ca_file: the system's CAs (libmosquitto wants a file or a directory).
            settings.caFile = configuration.caFile ?? "/etc/ssl/certs/ca-certificates.crt"
            settings.certFile = configuration.certFile
            settings.keyFile = configuration.keyFile
        }
        settings.will = (topic: "\(topic)/status", payload: Array(Self.offline.jsonText.utf8))
        return settings
    }
}
