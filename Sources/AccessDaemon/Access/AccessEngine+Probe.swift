import AccessCore
import ControlSocket

/// `readers.probe`: the engine keeps every advertisement of a probed reader while a probe
/// runs (bounded: a few probes at once, `ReaderProbe.maximumSamples` each); the caller's task
/// waits out the seconds, never the engine.
extension AccessEngine {
    static let probeLimit = 4
    static let probeSeconds = 1.0...60.0

    struct RunningProbe {
        var reader: ReaderID
        var probe = ReaderProbe()
    }

    /// A new probe of `reader`, or nil when `probeLimit` run already.
    func startProbe(_ reader: ReaderID) -> UInt64? {
        guard probes.count < Self.probeLimit else { return nil }
        nextProbe += 1
        probes[nextProbe] = RunningProbe(reader: reader)
        return nextProbe
    }

    /// Called for each advertisement the registry took.
    func probeHeard(_ id: ReaderID, at now: Timestamp) {
        guard !probes.isEmpty, let attributes = sightings.registry.reader(id) else { return }
        for key in probes.keys where probes[key]?.reader == id {
            probes[key]?.probe.add(
                .init(
                    time: now, rssi: attributes.rssi,
                    rawPathLoss: Double(attributes.txPower - attributes.rssi),
                    pathLoss: attributes.measuredPathLoss))
        }
    }

    /// Ends a probe and sums it up.
    func finishProbe(_ key: UInt64, seconds: Double) -> ProbeAnswer? {
        guard let running = probes.removeValue(forKey: key) else { return nil }
        let attributes = sightings.registry.reader(running.reader)
        let thresholds = (auto: attributes?.autoConnectPathLoss ?? 0, manual: attributes?.manualConnectPathLoss ?? 0)
        let summary = running.probe.summary(thresholds: thresholds)
        func figures(_ figures: ReaderProbe.Figures?) -> ProbeFigures? {
            figures.map {
                ProbeFigures(min: $0.min, median: $0.median, max: $0.max, mean: $0.mean, deviation: $0.deviation)
            }
        }
        var range = "unheard"
        if let attributes {
            range =
                attributes.isInAutoConnectRange
                ? "auto"
                : attributes.measuredPathLoss <= Double(attributes.manualConnectPathLoss) ? "manual" : "out"
        }
        let calibration = summary.calibration.map {
            ProbeCalibration(
                autoConnectPathLoss: $0.autoConnectPathLoss, manualConnectPathLoss: $0.manualConnectPathLoss,
                marginDb: $0.margin, kioskOffsetDb: Double(thresholds.auto - $0.autoConnectPathLoss))
        }
        return ProbeAnswer(
            reader: running.reader.description, name: attributes?.name, seconds: seconds,
            advertisements: summary.advertisements, dropped: running.probe.dropped,
            intervalMs: figures(summary.interval), rssi: figures(summary.rssi),
            rawPathLoss: figures(summary.rawPathLoss), pathLoss: figures(summary.pathLoss),
            histogram: summary.histogram.map { ProbeBin(fromDb: $0.lower, count: $0.count) },
            txPower: attributes?.txPower, autoConnectPathLoss: attributes.map { $0.autoConnectPathLoss },
            manualConnectPathLoss: attributes.map { $0.manualConnectPathLoss }, range: range,
            calibration: calibration)
    }
}
