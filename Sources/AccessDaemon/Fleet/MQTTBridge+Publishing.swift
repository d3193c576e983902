import AccessJSON
import AccessStore
import ControlSocket

/// What the bridge publishes on a connection: the journal's events in order, at most
/// `window` unacknowledged (the cursor moves only over the acknowledged front), retention's
/// losses announced, and the retained topics.
extension MQTTBridge {
    /// What the bridge has handed over and what came back, for one connection.
    struct Flight {
        /// Message id → journal sequence, for events not yet acknowledged.
        var pending: [Int32: Int64] = [:]
        /// Sequences in publish order, acknowledged or not; the cursor moves over the acknowledged front.
        var order: [Int64] = []
        var acknowledged: Set<Int64> = []
        /// The last sequence handed over on this connection.
        var published: Int64
    }

    /// Hands libmosquitto the events after the last one handed over, up to the window.
    func pump(_ client: MosquittoClient, _ flight: inout Flight, _ retained: inout MQTTRetainedTopics) {
        while flight.pending.count < Self.window {
            let events: [AccessStore.Event]
            do {
                if let oldest = try store.firstSequence(), oldest > flight.published + 1 {
                    announceDropped(client, from: flight.published + 1, to: oldest - 1)
                    flight.published = oldest - 1
                }
                events = try store.events(after: flight.published, limit: Self.window - flight.pending.count)
            } catch {
                logger.warning("the journal cannot be read for MQTT", metadata: ["error": "\(error)"])
                return
            }
            guard !events.isEmpty else { return }
            for event in events {
                let data = (try? JSONValue.parse(event.data)) ?? .null
                let payload = RPCRequest.eventParams(
                    sequence: event.sequence, time: event.time, kind: event.kind,
                    data: EventKind(rawValue: event.kind)?.redactedForObservers(data) ?? data)
                do {
                    let id = try client.publish(
                        topic: "\(topic)/events/\(event.kind)", payload: Array(payload.jsonText.utf8),
                        qos: configuration.qos, retain: false)
                    flight.pending[id] = event.sequence
                    flight.order.append(event.sequence)
                    flight.published = event.sequence
                } catch {
                    // The link is going: the disconnect that follows restarts from the cursor.
                    logger.debug("an MQTT publish was refused", metadata: ["error": "\(error)"])
                    return
                }
                if let kind = EventKind(rawValue: event.kind), MQTTRetainedTopics.observedKinds.contains(kind),
                    let typed = try? ControlEvent(kind: event.kind, data: data)
                {
                    publish(client, retained.observe(typed, time: event.time, now: .now))
                }
            }
        }
    }

    private func announceDropped(_ client: MosquittoClient, from: Int64, to: Int64) {
        logger.warning(
            "journal events removed by retention before the MQTT broker had them; announced",
            metadata: ["from": "\(from)", "to": "\(to)"])
        let notice = JSONValue.object([
            "kind": .string(RPCRequest.eventsDroppedMethod), "from": .int(from), "to": .int(to),
            "time": .double(Clocks.wall()),
        ])
        _ = try? client.publish(
            topic: "\(topic)/events/\(RPCRequest.eventsDroppedMethod)", payload: Array(notice.jsonText.utf8), qos: 1,
            retain: false)
    }

    func publishRetained(_ client: MosquittoClient, _ leaf: String, _ value: JSONValue) {
        publish(client, [("\(topic)/\(leaf)", value)])
    }

    /// Retained messages, QoS 1: a later one on the same topic replaces them at the broker.
    func publish(_ client: MosquittoClient, _ messages: [MQTTRetainedTopics.Message]) {
        for message in messages {
            _ = try? client.publish(
                topic: message.topic, payload: Array(message.payload.jsonText.utf8), qos: 1, retain: true)
        }
    }
}
