import AccessJSON
import AccessStore
import ControlSocket
import FoundationEssentials
import NIOConcurrencyHelpers
import Prometheus

/// accessd's Prometheus metrics (docs/operations.md, "Metrics") on a swift-prometheus
/// registry of the exporter's own. Its own API rather than swift-metrics' facade: the
/// facade's factory registers every metric without help text, and `promtool check metrics`
/// (the format's own checker) refuses metrics without it; a registry of its own (not the
/// process-wide `MetricsSystem`) also lets a test process run several daemons.
///
/// Two sources: the journal, followed like every other consumer (exchanges and their phase
/// latencies, events by kind, site failures, events lost), and a snapshot read at each
/// scrape (gauges, and totals kept elsewhere whose growth becomes counters).
final class DaemonMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    /// Totals seen at the last scrape, by metric and labels: what a counter has been given.
    private let exported = NIOLockedValueBox<[String: Int]>([:])
    /// Each reader's health gauges, to take them away when the reader is (`ReaderHealthMetrics`).
    let readerSeries = NIOLockedValueBox(ReaderSeries())

    /// Every metric and its help: one place, so a name is never registered with two helps.
    static let help: [String: String] = [
        "accessd_build_info": "accessd's version, as a label; always 1.",
        "accessd_uptime_seconds": "Seconds since accessd started.",
        "process_resident_memory_bytes": "accessd's resident memory in bytes.",
        "accessd_scanning": "1 while scanning for readers, else 0.",
        "accessd_bluetoothd_present": "1 while bluetoothd is on the system bus, else 0.",
        "accessd_adapter_present": "1 while accessd has a Bluetooth adapter to use, else 0.",
        "accessd_adapter_recoveries_total":
            "Rungs of the radio's recovery ladder taken since start, by rung (restartDiscovery, powerCycle) and result (recovered, silent, failed).",
        "accessd_adapter_switches_total":
            "Moves of scanning to another adapter since start, by reason (removed, poweredOff, blocked, unfit, silent, stuck, preferredBack).",
        "accessd_readers_known": "Readers heard recently (as accessctl readers lists them).",
        "accessd_readers_in_auto_range": "Readers within automatic-access range now.",
        "accessd_advertisements_total": "Reader advertisements heard since start, refused ones included.",
        "accessd_advertisements_refused_total":
            "Reader advertisements refused since start (unreadable, impossible RSSI, too many readers).",
        "accessd_credentials": "Credentials held.",
        "accessd_credentials_usable": "Credentials that are active and can be presented.",
        "accessd_credentials_key_unavailable":
            "Credentials whose key does not open on this kiosk or fails its self-test (never presented).",
        "accessd_exchanges_total":
            "Exchanges with readers since start, by origin, operation, outcome and result (the reader's decision or the error).",
        "accessd_exchange_phase_seconds":
            "Duration of each phase of an exchange: detection (crossing into range to connecting), connect, services, exchange, total.",
        "accessd_events_total": "Events journalled since start, by kind.",
        "accessd_events_lost_total": "Events that could not be journalled (full disk) and did not fit in memory.",
        "accessd_journal_events": "Events the journal keeps now.",
        "accessd_socket_clients": "Clients connected to the control socket.",
        "accessd_socket_events_dropped_total": "Events dropped for socket subscribers that did not keep up.",
        "accessd_bluez_call_failures_total": "BlueZ calls that failed since start, by class.",
        "accessd_site_syncs_total": "Site syncs since start, by result (ok or the error code).",
        "accessd_door_inputs_dropped_total":
            "Inputs an engine's door refused because it was full (a stopped engine), by door (access, exchanges).",
        "accessd_door_advertisements_merged_total":
            "Reader advertisements replaced by the same reader's next one while waiting for the access engine.",
        "accessd_site_failures_total":
            "Site features that started failing or changed their reason, by feature and error.",
        "accessd_audit_backlog_events": "Access events not yet acknowledged by their sites.",
        "accessd_mqtt_connected": "1 while connected to the MQTT broker, else 0.",
        "accessd_mqtt_backlog_events": "Events journalled after the last one the MQTT broker acknowledged.",
        "accessd_reader_advertisements_per_minute":
            "A reader's advertisements heard in the last health interval, per minute (absent when not measured).",
        "accessd_reader_usual_advertisements_per_minute":
            "The usual advertising rate learned for a reader, per minute (absent while learning).",
        "accessd_reader_path_loss_median_db": "Median path loss of a reader's last advertisements, in dB.",
        "accessd_reader_path_loss_spread_db": "Interquartile range of a reader's last path losses, in dB.",
        "accessd_reader_exchanges":
            "Exchanges with a reader in the health window, by result (granted, denied, failed) and, for failed, phase.",
        "accessd_reader_problem":
            "1 while a reader has the problem (silent, fewerAdvertisements, moreAdvertisements, failingExchanges), else 0.",
        "accessd_reader_last_heard_timestamp_seconds": "When a reader was last heard, in seconds since the epoch.",
    ]

    static let phaseBuckets: [Duration] = [
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(200), .milliseconds(350),
        .milliseconds(500), .milliseconds(750), .seconds(1), .milliseconds(1500), .milliseconds(2500), .seconds(5),
        .seconds(10),
    ]

    init() {
        gauge("accessd_build_info", [("version", AccessDaemon.version)]).set(to: 1)
    }

    func descriptor(_ name: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: Self.help[name] ?? name)
    }

    private func counter(_ name: String, _ labels: [(String, String)] = []) -> Counter {
        registry.makeCounter(descriptor: descriptor(name), labels: labels)
    }

    func gauge(_ name: String, _ labels: [(String, String)] = []) -> Gauge {
        registry.makeGauge(descriptor: descriptor(name), labels: labels)
    }

    // MARK: From the journal

    /// One event as the journal keeps it.
    /// Only the kinds counted beyond `accessd_events_total` are decoded: sightings are most
    /// events, and decoding one costs a parse and a JSONDecoder pass.
    func record(_ stored: AccessStore.Event) {
        guard let kind = EventKind(rawValue: stored.kind), Self.decodedKinds.contains(kind) else {
            return record(kind: stored.kind, event: nil)
        }
        let data = (try? JSONValue.parse(stored.data)) ?? .null
        record(kind: stored.kind, event: try? ControlEvent(kind: stored.kind, data: data), time: stored.time)
    }

    static let decodedKinds: Set<EventKind> = [.accessCompleted, .featureState, .eventsLost, .readerHealth]

    /// One journalled event: its kind as the journal holds it (counted even if its data no
    /// longer decodes), and the event when it does.
    func record(kind: String, event: ControlEvent?, time: Double = 0) {
        counter("accessd_events_total", [("kind", kind)]).increment()
        switch event {
        case .accessCompleted(let answer)?:
            let result = answer.decision ?? answer.error ?? (answer.outcome == "actionPerformed" ? "performed" : "none")
            // "actions.perform 2": the action's number is not a label (unbounded).
            let operation = answer.operation?.split(separator: " ").first.map(String.init) ?? "access"
            counter(
                "accessd_exchanges_total",
                [
                    ("origin", answer.origin), ("operation", operation),
                    ("outcome", answer.outcome), ("result", result),
                ]
            ).increment()
            let timings = answer.timings
            for (phase, milliseconds) in [
                ("detection", timings?.detectionMs), ("connect", timings?.connectMs),
                ("services", timings?.resolveMs), ("exchange", timings?.exchangeMs),
                ("total", timings?.totalMs),
            ] {
                guard let milliseconds, milliseconds >= 0, milliseconds < 3_600_000 else { continue }
                registry.makeDurationHistogram(
                    descriptor: descriptor("accessd_exchange_phase_seconds"),
                    labels: [("phase", phase)], buckets: Self.phaseBuckets
                )
                .recordNanoseconds(Int64(milliseconds * 1_000_000))
            }
        case .featureState(let feature)? where feature.state == .failed:
            counter(
                "accessd_site_failures_total", [("feature", feature.feature), ("error", feature.error ?? "unknown")]
            )
            .increment()
        case .eventsLost(let lost)?:
            counter("accessd_events_lost_total").increment(by: Int64(max(0, lost.count)))
        case .readerHealth(let health)?:
            readerHealth(health, time: time)
        default:
            break
        }
    }

    // MARK: At each scrape

    func refresh(_ snapshot: MetricsSnapshot) {
        gauge("accessd_uptime_seconds").set(to: snapshot.uptimeSeconds)
        if let resident = MetricsSnapshot.residentBytes() { gauge("process_resident_memory_bytes").set(to: resident) }
        gauge("accessd_scanning").set(to: snapshot.scanning ? 1 : 0)
        gauge("accessd_bluetoothd_present").set(to: snapshot.bluetoothdPresent ? 1 : 0)
        gauge("accessd_adapter_present").set(to: snapshot.adapterPresent ? 1 : 0)
        gauge("accessd_readers_known").set(to: Double(snapshot.readersKnown))
        gauge("accessd_readers_in_auto_range").set(to: Double(snapshot.readersInAutoRange))
        gauge("accessd_credentials").set(to: Double(snapshot.credentialsHeld))
        gauge("accessd_credentials_usable").set(to: Double(snapshot.credentialsUsable))
        gauge("accessd_credentials_key_unavailable").set(to: Double(snapshot.credentialsKeyUnavailable))
        gauge("accessd_journal_events").set(to: Double(snapshot.journalEvents))
        gauge("accessd_audit_backlog_events").set(to: Double(snapshot.auditBacklog))
        gauge("accessd_socket_clients").set(to: Double(snapshot.socketClients))
        if let mqtt = snapshot.mqtt {
            gauge("accessd_mqtt_connected").set(to: mqtt.state == .connected ? 1 : 0)
            gauge("accessd_mqtt_backlog_events").set(to: Double(mqtt.backlog))
        }
        total("accessd_advertisements_total", snapshot.advertisementsSeen)
        total("accessd_advertisements_refused_total", snapshot.advertisementsRefused)
        total("accessd_socket_events_dropped_total", snapshot.socketDroppedEvents)
        for (error, count) in snapshot.bluezCallFailures {
            total("accessd_bluez_call_failures_total", count, [("error", error)])
        }
        for (result, count) in snapshot.siteSyncs { total("accessd_site_syncs_total", count, [("result", result)]) }
        for (door, count) in snapshot.doorInputsDropped {
            total("accessd_door_inputs_dropped_total", count, [("door", door)])
        }
        total("accessd_door_advertisements_merged_total", snapshot.doorAdvertisementsMerged)
        for recovery in snapshot.adapterRecoveries {
            total(
                "accessd_adapter_recoveries_total", recovery.count,
                [("rung", recovery.rung), ("result", recovery.result)])
        }
        for (reason, count) in snapshot.adapterSwitches {
            total("accessd_adapter_switches_total", count, [("reason", reason)])
        }
    }

    /// A total kept elsewhere, as a counter: incremented by its growth since the last scrape.
    private func total(_ name: String, _ value: Int, _ labels: [(String, String)] = []) {
        let key = name + labels.map { "|\($0.0)=\($0.1)" }.joined()
        let growth = exported.withLockedValue { exported -> Int in
            let before = exported[key] ?? 0
            exported[key] = max(before, value)
            return max(0, value - before)
        }
        counter(name, labels).increment(by: Int64(growth))
    }

    /// The text exposition format (version 0.0.4).
    func render() -> [UInt8] {
        registry.emitToBuffer()
    }
}
