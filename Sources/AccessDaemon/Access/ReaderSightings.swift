import AccessCore
import BlueZ

/// What is heard of readers: BlueZ's device reports parsed into reader advertisements and fed
/// to the registry, with the count of refused advertisements and, per reader, when its current
/// approach first crossed into auto range (where an automatic exchange's "detection" starts).
struct ReaderSightings: Sendable {
    var registry: ReaderRegistry
    private(set) var refused = 0
    /// Reader advertisements heard (refused ones included), for the metrics.
    private(set) var seen = 0
    private var firstInRange: [ReaderID: ContinuousClock.Instant] = [:]
    /// Each reader's device and the advertisement reports counted on it when last taken:
    /// how many reports one taken sighting stands for. One entry per reader the registry took.
    private var reportsTaken: [ReaderID: (device: String, reports: UInt64)] = [:]

    struct Sighting {
        var advertisement: ReaderAdvertisement
        var observation: ReaderRegistry.Observation
        /// This advertisement's own path loss (dB): TX power − RSSI, before smoothing and
        /// without the sensitivity and per-reader offsets (a calibration is not the radio's).
        var pathLoss: Double
        /// Advertisements it stands for (those merged while it waited included; 0 when it
        /// carried an RSSI alone).
        var reports: Int
    }

    init(range: RangeConfiguration) {
        registry = ReaderRegistry(range: range)
    }

    /// A device report: nil when it carries no reader service data, RSSI and address, or
    /// when its service data is refused (counted; `error` says why).
    mutating func observe(_ device: DeviceState, at now: Timestamp, refusal: (AdvertisementError) -> Void) -> Sighting?
    {
        guard let payload = device.serviceData[ReaderAdvertisement.serviceDataUUIDString], let rssi = device.rssi,
            let address = device.address
        else { return nil }
        seen += 1
        guard ReaderRegistry.measurableRSSI.contains(rssi) else {
            refused += 1
            refusal(.rssiOutOfRange(rssi))
            return nil
        }
        let advertisement: ReaderAdvertisement
        do {
            advertisement = try ReaderAdvertisement(serviceData: payload)
        } catch {
            refused += 1
            refusal(error)
            return nil
        }
        guard registry.hasRoom(for: advertisement.readerID) else {
            refused += 1
            refusal(.tooManyReaders(limit: ReaderRegistry.capacity))
            return nil
        }
        let raw = address.bytes
        let deviceAddress = DeviceAddress(
            rawValue: [raw.0, raw.1, raw.2, raw.3, raw.4, raw.5].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        let observation = registry.observe(
            advertisement, rssi: rssi, address: deviceAddress, name: device.preferredName, at: now)
        // The raw (unsmoothed) crossing starts detection; leaving auto range ends the approach.
        let id = advertisement.readerID
        let rawPathLoss =
            Double(Int(advertisement.txPower) - Int(rssi)) + registry.range.sensitivityOffset
            + registry.scope.pathLossOffset(for: id)
        if rawPathLoss <= Double(advertisement.autoConnectPathLoss) {
            if firstInRange[id] == nil { firstInRange[id] = ContinuousClock.now }
        } else if observation.autoConnectRangeChanged && !observation.isInAutoConnectRange {
            firstInRange[id] = nil
        }
        if observation.becameUnavailable { firstInRange[id] = nil }
        // A report of the same device since the last one taken: the reports counted meanwhile
        // (0 for a signal that carried an RSSI alone); else this one.
        var reports = 1
        if let taken = reportsTaken[id], taken.device == device.path, device.advertisementReports >= taken.reports {
            reports = Int(min(device.advertisementReports - taken.reports, 10_000))
        }
        reportsTaken[id] = (device.path, device.advertisementReports)
        return Sighting(
            advertisement: advertisement, observation: observation,
            pathLoss: Double(Int(advertisement.txPower) - rssi), reports: reports)
    }

    func detected(_ reader: ReaderID) -> ContinuousClock.Instant? { firstInRange[reader] }

    /// Readers not heard for too long, except those with an exchange (a connected reader
    /// stops advertising).
    mutating func expire(at now: Timestamp, linked: Set<ReaderID>) -> [ReaderID] {
        let gone = registry.expire(at: now, linked: linked)
        for id in gone { firstInRange[id] = nil }
        // Readers the registry let go of are not listed one by one: past its capacity twice
        // over, the counts start again (a reader's next sighting then counts as one report).
        if reportsTaken.count > 2 * ReaderRegistry.capacity { reportsTaken.removeAll() }
        return gone
    }

    mutating func removeAll() -> [ReaderID] {
        let gone = registry.removeAll()
        firstInRange.removeAll()
        reportsTaken.removeAll()
        return gone
    }
}
