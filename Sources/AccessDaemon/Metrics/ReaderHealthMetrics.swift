import ControlSocket
import NIOConcurrencyHelpers
import Prometheus

/// The per-reader health gauges (`accessd_reader_*`), from the `reader.health` events. One
/// set of series per reader, for at most `ReaderSeries.limit` readers: a record of a reader
/// beyond it takes away the series of the reader whose record is oldest, so a flood of
/// made-up reader ids cannot grow a scrape without bound.
struct ReaderSeries: Sendable {
    static let limit = 256
    var gauges: [String: (updated: Double, gauges: [Gauge])] = [:]
}

extension DaemonMetrics {
    func readerHealth(_ health: ReaderHealthEvent, time: Double) {
        let reader = ("reader", health.reader)
        var gauges: [Gauge] = []
        func set(_ name: String, _ value: Double?, _ labels: [(String, String)] = []) {
            let gauge = gauge(name, [reader] + labels)
            if let value {
                gauge.set(to: value)
                gauges.append(gauge)
            } else {
                registry.unregisterGauge(gauge)
            }
        }
        set("accessd_reader_advertisements_per_minute", health.advertisementsPerMinute)
        set("accessd_reader_usual_advertisements_per_minute", health.usualPerMinute)
        set("accessd_reader_path_loss_median_db", health.pathLoss?.median)
        set("accessd_reader_path_loss_spread_db", health.pathLoss?.spread)
        let exchanges = health.exchanges
        set("accessd_reader_exchanges", Double(exchanges.granted), [("result", "granted"), ("phase", "")])
        set("accessd_reader_exchanges", Double(exchanges.denied), [("result", "denied"), ("phase", "")])
        for phase in ["connect", "services", "exchange"] {
            set(
                "accessd_reader_exchanges", Double(exchanges.failed[phase] ?? 0),
                [("result", "failed"), ("phase", phase)])
        }
        for problem in ["silent", "fewerAdvertisements", "moreAdvertisements", "failingExchanges"] {
            set("accessd_reader_problem", health.problems.contains(problem) ? 1 : 0, [("problem", problem)])
        }
        set("accessd_reader_last_heard_timestamp_seconds", time > 0 ? time - Double(health.heardSecondsAgo) : nil)
        let evicted = readerSeries.withLockedValue { series -> [Gauge] in
            series.gauges[health.reader] = (time, gauges)
            guard series.gauges.count > ReaderSeries.limit,
                let oldest = series.gauges.min(by: { $0.value.updated < $1.value.updated })?.key
            else { return [] }
            return series.gauges.removeValue(forKey: oldest)?.gauges ?? []
        }
        for gauge in evicted { registry.unregisterGauge(gauge) }
    }
}
