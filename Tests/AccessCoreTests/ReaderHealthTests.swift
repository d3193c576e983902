import Testing

@testable import AccessCore

/// Reader health (issue #34, item 5) on a virtual clock: a reader's usual advertising rate is
/// learned, a rate that falls or rises, a silence and failing exchanges are named, an interval
/// the kiosk did not listen to judges nothing, and records go out only when worth it.
@Suite("Reader health", .timeLimit(.minutes(2)))
struct ReaderHealthTests {
    var book = ReaderHealthBook()
    var now = Timestamp.zero
    /// Every record published, oldest first.
    var published: [ReaderHealthRecord] = []
    let front = ReaderID(0x2A01)
    let side = ReaderID(0x2A02)

    /// `minutes` of the default one-minute intervals, `front` advertising `perMinute` times a
    /// minute at path losses cycling through `pathLoss`, ticking each second.
    mutating func hear(
        _ reader: ReaderID? = nil, perMinute: Int, minutes: Int, seconds: Int? = nil, pathLoss: [Double] = [50],
        linked: Set<ReaderID> = []
    ) {
        let duration = seconds ?? minutes * 60
        let reader = reader ?? front
        let step = perMinute > 0 ? 60_000 / perMinute : 0
        var sample = 0
        for second in 0..<duration {
            for millisecond in stride(from: 0, to: 1000, by: 10) {
                let at = second * 1000 + millisecond
                now = .zero + .milliseconds(at) + elapsed
                if step > 0, at % step == 0 {
                    book.heard(reader, pathLoss: pathLoss[sample % pathLoss.count], at: now)
                    sample += 1
                }
            }
            now = .zero + .seconds(second + 1) + elapsed
            published += book.tick(at: now, linked: linked)
        }
        elapsed = elapsed + .seconds(duration)
    }

    var elapsed: Duration = .zero
    var last: ReaderHealthRecord? { published.last { $0.reader == front } }

    @Test mutating func aRateThatHalvesIsFewerAdvertisementsUntilItComesBack() {
        book.listening(true)
        hear(perMinute: 600, minutes: 4)
        #expect(last?.usualPerMinute == nil, "learning for 5 intervals")
        hear(perMinute: 600, minutes: 4)
        #expect(last?.usualPerMinute == 600)
        #expect(last?.advertisementsPerMinute == 600)
        #expect(last?.problems == [])
        hear(perMinute: 300, minutes: 2)
        #expect(last?.problems == [.fewerAdvertisements], "\(String(describing: last))")
        #expect(last?.advertisementsPerMinute == 300)
        #expect(last?.usualPerMinute == 600, "the usual rate does not follow a change of minutes")
        hear(perMinute: 1200, minutes: 2)
        #expect(last?.problems == [.moreAdvertisements])
        hear(perMinute: 600, minutes: 2)
        #expect(last?.problems == [])
    }

    /// A reader first heard half-way through an interval: that interval's count is half a
    /// rate, so it is neither reported as one nor learned from.
    @Test mutating func theIntervalAReaderIsFirstHeardInMeasuresNoRate() {
        book.listening(true)
        hear(side, perMinute: 600, minutes: 0, seconds: 90)  // `front` starts 30 s into an interval
        hear(perMinute: 600, minutes: 0, seconds: 30)
        // Its first record: heard, no rate (half a minute's count is not a rate of 300).
        #expect(last?.advertisementsPerMinute == nil, "\(String(describing: last))")
        hear(perMinute: 600, minutes: 6)
        #expect(last?.usualPerMinute == 600, "\(String(describing: last))")
        #expect(!published.contains { $0.reader == front && $0.advertisementsPerMinute == 300 })
    }

    @Test mutating func aReaderNotHeardWhileTheKioskListensIsSilentAndOnlyThen() {
        book.listening(true)
        hear(perMinute: 120, minutes: 6)
        hear(side, perMinute: 120, minutes: 3)  // front not heard: silent after two intervals
        #expect(last?.problems == [.silent])
        #expect(last?.advertisementsPerMinute == 0)
        #expect((last?.heardAgo ?? .zero) >= .seconds(120))
        hear(perMinute: 120, minutes: 2)
        #expect(last?.problems == [])

        // Scanning off: nothing measured, nothing silent.
        book.listening(false)
        hear(side, perMinute: 0, minutes: 4)
        #expect(last?.problems == [])
        #expect(last?.advertisementsPerMinute == nil)
        book.listening(true)
        // Connected for minutes (a held link): it does not advertise, and is not silent.
        hear(side, perMinute: 0, minutes: 4, linked: [front])
        #expect(last?.problems == [])
    }

    @Test mutating func exchangesFailingOnTheReadersSideAreFailingExchangesByPhase() throws {
        book.listening(true)
        hear(perMinute: 60, minutes: 1)
        let granted = AccessResult(decision: .granted, mode: .access)
        let denied = AccessResult(decision: .deniedZone, mode: .access)
        for (outcome, phase) in [
            (ExchangeOutcome.decided(granted), ReaderExchangeResult.Phase.exchange),
            (.decided(denied), .exchange), (.failed(.timedOut), .connect), (.failed(.timedOut), .services),
            // Not the reader's doing: a person declining, the adapter off, a busy reader.
            (.failed(.userCancelled), .exchange), (.failed(.bluetoothDisabled), .connect),
            (.failed(.readerBusy), .exchange),
        ] {
            if let result = ReaderExchangeResult(outcome, phase: phase) { book.exchanged(front, result) }
        }
        hear(perMinute: 60, minutes: 1)
        var record = try #require(last)
        #expect(record.granted == 1 && record.denied == 1 && record.failed == [.connect: 1, .services: 1])
        #expect(record.problems == [], "two failures of four")
        book.exchanged(front, .failed(.exchange))
        book.exchanged(front, .failed(.exchange))
        hear(perMinute: 60, minutes: 1)
        record = try #require(last)
        #expect(record.failedTotal == 4)
        #expect(record.problems == [.failingExchanges])
        // An hour on, they left the window.
        hear(perMinute: 60, minutes: 61)
        #expect(last?.failedTotal == 0 && last?.problems == [])
    }

    @Test mutating func aSteadyReaderIsPublishedAtFirstThenEveryQuarterHour() {
        book.listening(true)
        hear(perMinute: 600, minutes: 60, pathLoss: [40, 44, 48, 52])
        let records = published.filter { $0.reader == front }
        // The first interval, the usual rate stated (interval 5), then heartbeats.
        #expect(records.count <= 6, "\(records.count) records in an hour")
        #expect(last?.pathLossMedian == 46)
        #expect(last?.pathLossSpread == 6, "interquartile range, interpolated: 49 − 43")
        #expect(last?.pathLossSamples == 64)
    }

    @Test mutating func aFloodOfReaderIdsTakesThePlacesOfTheOldestAndNoMore() {
        book.listening(true)
        for id in 0..<UInt32(1000) {
            now = now + .milliseconds(1)
            book.heard(ReaderID(id), pathLoss: 60, at: now)
        }
        #expect(book.count == ReaderHealthPolicy.capacity)
        #expect(book.evicted == 1000 - ReaderHealthPolicy.capacity)
    }
}
