import AccessCore
import ControlSocket

extension Render {
    /// The core's record as the `reader.health` event carries it.
    static func health(_ record: ReaderHealthRecord) -> ReaderHealthEvent {
        ReaderHealthEvent(
            reader: record.reader.description, name: record.name, problems: record.problems.map(\.rawValue),
            advertisementsPerMinute: record.advertisementsPerMinute, usualPerMinute: record.usualPerMinute,
            pathLoss: record.pathLossMedian.map { median in
                ReaderHealthEvent.PathLoss(
                    median: median, spread: record.pathLossSpread ?? 0, samples: record.pathLossSamples)
            },
            exchanges: ReaderHealthEvent.Exchanges(
                windowSeconds: Int(record.exchangeWindow.components.seconds), granted: record.granted,
                denied: record.denied,
                failed: Dictionary(uniqueKeysWithValues: record.failed.map { ($0.key.rawValue, $0.value) })),
            heardSecondsAgo: Int(record.heardAgo.components.seconds),
            intervalSeconds: Int(record.interval.components.seconds))
    }
}

extension ReaderExchangeResult.Phase {
    /// Where an exchange was when it ended, from the phases its timings reached
    /// (`AccessEngine.phase`): failing before connecting is failing to connect.
    init(_ timings: ExchangeTimings?) {
        switch AccessEngine.phase(timings).name {
        case "services": self = .services
        case "exchange": self = .exchange
        default: self = .connect
        }
    }
}
