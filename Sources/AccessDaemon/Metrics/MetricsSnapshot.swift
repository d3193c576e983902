import AccessCore
import ControlSocket
import FoundationEssentials
import Glibc

/// What the metrics read at each scrape, from the daemon and from the parts around it (the
/// socket server, the BlueZ client). Counts since start are totals; the exporter turns
/// their growth into Prometheus counters.
public struct MetricsSnapshot: Sendable {
    public var readersKnown = 0
    public var readersInAutoRange = 0
    public var advertisementsSeen = 0
    public var advertisementsRefused = 0
    public var credentialsHeld = 0
    public var credentialsUsable = 0
    public var credentialsKeyUnavailable = 0
    public var scanning = false
    public var bluetoothdPresent = false
    public var adapterPresent = false
    public var journalEvents: Int64 = 0
    public var auditBacklog = 0
    public var mqtt: MQTTStatus?
    public var uptimeSeconds: Double = 0
    public var socketClients = 0
    public var socketDroppedEvents = 0
    /// Failed BlueZ calls since start by class (`BlueZError.code`).
    public var bluezCallFailures: [String: Int] = [:]
    /// Site syncs since start by result (`ok`, or a `site.*` code).
    public var siteSyncs: [String: Int] = [:]
    /// Inputs the engines' doors refused (full) and reader reports merged while waiting, by door.
    public var doorInputsDropped: [String: Int] = [:]
    public var doorAdvertisementsMerged = 0
    /// The recovery ladder's rungs since start, by rung and result.
    public var adapterRecoveries: [RecoveryCount] = []
    /// Moves of scanning to another adapter since start, by reason.
    public var adapterSwitches: [String: Int] = [:]

    public init() {}

    /// This process's resident set, from /proc/self/statm (pages × page size).
    static func residentBytes() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Double(fields[1]) else { return nil }
        return pages * Double(sysconf(Int32(_SC_PAGESIZE)))
    }
}

extension AccessDaemonServices {
    /// The daemon's part of a scrape.
    public func metricsSnapshot() async -> MetricsSnapshot {
        let engine = await access.status
        let (scanningEnabled, adapter, radio) = await discovery.scanningAndAdapter
        var snapshot = MetricsSnapshot()
        snapshot.readersKnown = engine.readerCount
        snapshot.readersInAutoRange = engine.readersInAutoRange
        snapshot.advertisementsSeen = engine.seenAdvertisements
        snapshot.advertisementsRefused = engine.refusedAdvertisements
        snapshot.credentialsHeld = book.credentials.count
        snapshot.credentialsUsable = sdk.inputs.usableCredentialCount
        snapshot.credentialsKeyUnavailable = sdk.inputs.keyUnavailableCredentialCount
        snapshot.scanning = sdk.current.isScanning && scanningEnabled
        snapshot.bluetoothdPresent = sdk.inputs.bluetoothServicePresent
        snapshot.adapterPresent = adapter != nil
        snapshot.adapterRecoveries = radio.recoveries
        snapshot.adapterSwitches = await discovery.adapterSwitches
        let first = (try? journal.store.firstSequence()) ?? nil
        snapshot.journalEvents = first.map { max(0, journal.lastSequence - $0 + 1) } ?? 0
        snapshot.auditBacklog = audit.status.backlog
        snapshot.mqtt = mqtt?.status
        snapshot.siteSyncs = await sync.outcomes
        let (access, exchanges) = (doors.access.counts, doors.exchanges.counts)
        snapshot.doorInputsDropped = ["access": access.dropped, "exchanges": exchanges.dropped]
        snapshot.doorAdvertisementsMerged = access.coalesced
        snapshot.uptimeSeconds = Double(Int64((Clocks.monotonic() - startedAt).components.seconds))
        return snapshot
    }
}
