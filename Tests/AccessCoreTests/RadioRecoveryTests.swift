import Testing

@testable import AccessCore

/// The recovery ladder (issue #38) on a virtual clock: a radio that stops hearing climbs from
/// restarting discovery to a power cycle to "stuck", never during an exchange, never faster
/// than its backoff, and ends the moment anything is heard again.
@Suite("Radio recovery ladder", .timeLimit(.minutes(5)))
struct RadioRecoveryTests {
    var ladder = RadioRecovery()
    var now = Timestamp.zero
    /// Every action the ladder returned, with when.
    var taken: [(Timestamp, RadioRecovery.Action)] = []

    /// Hears a reader every 100 ms until `until`, ticking each second, as the shell does.
    mutating func hearReaders(until end: Timestamp) {
        while now < end {
            now = now + .milliseconds(100)
            if let action = ladder.heard(at: now, reader: true) { taken.append((now, action)) }
            if now.nanoseconds % 1_000_000_000 == 0 { tick() }
        }
    }

    /// Ticks once a second until `until`; a power cycle ends `powerCycleTakes` after it began.
    mutating func silence(
        until end: Timestamp, powerCycleTakes: Duration? = .milliseconds(1500), powerCycleWorks: Bool = true
    ) {
        var cycleEnds: Timestamp?
        while now < end {
            now = now + .milliseconds(100)
            if let ends = cycleEnds, now >= ends {
                cycleEnds = nil
                for action in ladder.powerCycleEnded(ok: powerCycleWorks, at: now) { taken.append((now, action)) }
            }
            guard now.nanoseconds % 1_000_000_000 == 0 else { continue }
            let before = taken.count
            tick()
            if taken[before...].contains(where: { $0.1 == .powerCycle }), let takes = powerCycleTakes {
                cycleEnds = now + takes
            }
        }
    }

    mutating func tick() {
        for action in ladder.tick(at: now) { taken.append((now, action)) }
    }

    mutating func start() {
        ladder.conditions(canListen: true, at: now)
    }

    var powerCycles: [Timestamp] { taken.filter { $0.1 == .powerCycle }.map(\.0) }

    @Test mutating func aWedgeIsClearedByAPowerCycleWithinFifteenSeconds() {
        start()
        hearReaders(until: .seconds(10))
        silence(until: .seconds(22))
        // Restart at 5 s of silence, the power cycle 5 s later, ended 1.5 s after that.
        #expect(taken.map(\.1) == [.restartDiscovery, .powerCycle], "\(taken)")
        #expect(taken.map(\.0) == [.seconds(15), .seconds(20)])
        let recovered = ladder.heard(at: now, reader: true)
        #expect(recovered == .reportRecovered(.powerCycle, after: .seconds(12)))
        #expect(ladder.state == .listening)
        #expect(ladder.counts[.restartDiscovery]?[.silent] == 1)
        #expect(ladder.counts[.powerCycle]?[.recovered] == 1)
    }

    @Test mutating func aRestartOfDiscoveryThatHelpsEndsTheLadderThere() {
        start()
        hearReaders(until: .seconds(10))
        silence(until: .seconds(16))
        #expect(taken.map(\.1) == [.restartDiscovery])
        #expect(ladder.heard(at: now, reader: false) == .reportRecovered(.restartDiscovery, after: .seconds(6)))
        #expect(ladder.counts[.restartDiscovery]?[.recovered] == 1)
        hearReaders(until: .seconds(60))
        #expect(taken.count == 1)
    }

    /// A controller no power cycle brings back: stuck within `settle` of the first power
    /// cycle's end, then tried again no more often than the backoff, which doubles to 10 min.
    @Test mutating func aHardWedgeIsStuckAndRetriedWithBackoff() {
        start()
        hearReaders(until: .seconds(10))
        silence(until: .seconds(3600))
        let stuck = taken.first { if case .reportStuck = $0.1 { true } else { false } }
        #expect(stuck?.0 == .seconds(27), "\(taken)")
        #expect(stuck?.1 == .reportStuck(retryIn: .seconds(30)))
        #expect(ladder.isStuck)
        let cycles = powerCycles
        let gaps = zip(cycles.dropFirst(), cycles).map { $0 - $1 }
        #expect(cycles.count <= 10, "\(cycles)")
        #expect(gaps == gaps.sorted() && gaps.allSatisfy { $0 >= .seconds(30) }, "\(gaps)")
        #expect(gaps.last ?? .zero <= .seconds(610))
        #expect(ladder.counts[.powerCycle]?[.silent] == cycles.count)
        // Anything heard ends it.
        #expect(ladder.heard(at: now, reader: false) != nil)
        #expect(!ladder.isRecovering)
    }

    @Test mutating func nothingIsDoneWhileAnExchangeRuns() {
        start()
        hearReaders(until: .seconds(10))
        ladder.exchangeActive(true)
        silence(until: .seconds(40))
        #expect(taken.isEmpty)
        ladder.exchangeActive(false)
        silence(until: .seconds(41))
        #expect(taken.map(\.1) == [.restartDiscovery])
        // The next rung waits for an exchange that started meanwhile too.
        ladder.exchangeActive(true)
        silence(until: .seconds(60))
        #expect(taken.map(\.1) == [.restartDiscovery])
        ladder.exchangeActive(false)
        silence(until: .seconds(61))
        #expect(taken.map(\.1) == [.restartDiscovery, .powerCycle])
    }

    @Test mutating func withoutReadersOnlyALongSilenceCounts() {
        start()
        silence(until: .seconds(59))
        #expect(taken.isEmpty)
        silence(until: .seconds(60))
        #expect(taken.map(\.1) == [.restartDiscovery])
    }

    @Test mutating func readersHeardLongAgoDoNotShortenTheWait() {
        start()
        hearReaders(until: .seconds(1))
        // Phones and beacons keep it hearing; the readers went quiet long ago.
        while now < .seconds(200) {
            now = now + .seconds(1)
            _ = ladder.heard(at: now, reader: false)
            tick()
        }
        silence(until: .seconds(250))
        #expect(taken.isEmpty, "\(taken)")
        silence(until: .seconds(260))
        #expect(taken.map(\.1) == [.restartDiscovery])
    }

    @Test mutating func scanningOffIsNotSilence() {
        start()
        hearReaders(until: .seconds(10))
        ladder.conditions(canListen: false, at: now)
        silence(until: .seconds(300))
        #expect(taken.isEmpty)
        // Back on: the silence counts from now, not from the last reader (heard too long ago
        // to shorten the wait).
        start()
        silence(until: .seconds(359))
        #expect(taken.isEmpty)
        silence(until: .seconds(360))
        #expect(taken.map(\.1) == [.restartDiscovery])
    }

    @Test mutating func aPowerCycleBlueZRefusesIsAFailureAndStuck() {
        start()
        hearReaders(until: .seconds(10))
        silence(until: .seconds(22), powerCycleWorks: false)
        #expect(ladder.counts[.powerCycle]?[.failed] == 1)
        #expect(ladder.isStuck)
    }

    @Test mutating func aPowerCycleThatNeverEndsIsAFailureAfterItsLimit() {
        start()
        hearReaders(until: .seconds(10))
        silence(until: .seconds(29), powerCycleTakes: nil)
        #expect(!ladder.isStuck)
        silence(until: .seconds(30), powerCycleTakes: nil)
        #expect(ladder.isStuck)
        #expect(ladder.counts[.powerCycle]?[.failed] == 1)
    }

    @Test mutating func theAdapterGoingDownDuringOurPowerCycleIsNotAChangeOfConditions() {
        start()
        hearReaders(until: .seconds(10))
        silence(until: .seconds(20), powerCycleTakes: nil)
        #expect(ladder.state == .powerCycling(since: .seconds(20)))
        ladder.conditions(canListen: false, at: now)
        #expect(ladder.state == .powerCycling(since: .seconds(20)))
    }

    /// Two wedges close together: the second power cycle waits out the backoff; after ten
    /// minutes of hearing the backoff starts over.
    @Test mutating func powerCyclesAreNeverCloserThanTheBackoff() {
        start()
        hearReaders(until: .seconds(10))
        silence(until: .seconds(22))
        _ = ladder.heard(at: now, reader: true)
        hearReaders(until: .seconds(30))
        silence(until: .seconds(60))
        // The second: not before 30 s after the first (at 20 s).
        #expect(powerCycles == [.seconds(20), .seconds(50)], "\(taken)")
        _ = ladder.heard(at: now, reader: true)
        hearReaders(until: .seconds(700))
        silence(until: .seconds(720))
        #expect(powerCycles.last == .seconds(710), "the backoff started over: \(powerCycles)")
    }
}
