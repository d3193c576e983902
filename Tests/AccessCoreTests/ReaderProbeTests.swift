import Testing

@testable import AccessCore

/// The figures of a probe (`accessctl probe`): advertising interval, radio steadiness, and a
/// calibration that puts the range's edge where the probe stood.
@Suite("Reader probe", .timeLimit(.minutes(5)))
struct ReaderProbeTests {
    private func probe(_ rawPathLosses: [Double], every milliseconds: Int64 = 100) -> ReaderProbe {
        var probe = ReaderProbe()
        for (index, loss) in rawPathLosses.enumerated() {
            probe.add(
                .init(
                    time: Timestamp(nanoseconds: Int64(index) * milliseconds * 1_000_000), rssi: -59 - Int(loss),
                    rawPathLoss: loss, pathLoss: loss))
        }
        return probe
    }

    @Test func figuresOfASteadyReader() throws {
        let summary = probe([18, 19, 20, 21, 22]).summary(thresholds: (auto: 20, manual: 40))
        #expect(summary.advertisements == 5)
        let interval = try #require(summary.interval)
        #expect(interval.mean == 100 && interval.deviation == 0 && interval.min == 100 && interval.max == 100)
        #expect(summary.rssi?.min == -81 && summary.rssi?.median == -79 && summary.rssi?.max == -77)
        #expect(summary.rawPathLoss?.median == 20)
        #expect(summary.histogram.map(\.lower) == [18, 20, 22] && summary.histogram.map(\.count) == [2, 2, 1])
    }

    /// Median 20 dB, deviation √2: the margin is 2√2 (over the 2 dB floor), the auto edge
    /// ⌈22.83⌉ = 23, and the reader's 20 dB between auto and manual is kept.
    @Test func aCalibrationPutsTheEdgeJustBeyondWhereItStood() throws {
        let calibration = try #require(
            probe([18, 19, 20, 21, 22]).summary(thresholds: (auto: 20, manual: 40)).calibration)
        #expect(calibration.autoConnectPathLoss == 23 && calibration.manualConnectPathLoss == 43)
        #expect(abs(calibration.margin - 2 * 2.0.squareRoot()) < 1e-9)
        // A perfectly steady radio still gets the 2 dB floor.
        let steady = try #require(probe([30, 30, 30, 30, 30]).summary(thresholds: (auto: 20, manual: 30)).calibration)
        #expect(steady.autoConnectPathLoss == 32 && steady.manualConnectPathLoss == 42 && steady.margin == 2)
    }

    @Test func tooFewAdvertisementsGiveNoCalibration() {
        let summary = probe([20, 21]).summary(thresholds: (auto: 20, manual: 40))
        #expect(summary.calibration == nil && summary.interval?.mean == 100)
        let nothing = ReaderProbe().summary(thresholds: (auto: 20, manual: 40))
        #expect(
            nothing.advertisements == 0 && nothing.interval == nil && nothing.rssi == nil && nothing.histogram.isEmpty)
    }

    @Test func aProbeIsBounded() {
        var probe = ReaderProbe()
        for index in 0..<(ReaderProbe.maximumSamples + 3) {
            probe.add(.init(time: Timestamp(nanoseconds: Int64(index)), rssi: -70, rawPathLoss: 11, pathLoss: 11))
        }
        #expect(probe.samples.count == ReaderProbe.maximumSamples && probe.dropped == 3)
    }
}
