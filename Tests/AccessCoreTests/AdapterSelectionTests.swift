import Testing

@testable import AccessCore

/// Several adapters (issue #38, part 2) on a virtual clock: accessd leaves an adapter the
/// moment it stops being usable or is stuck, returns to the preferred one only after it has
/// been steady and between exchanges, and never flaps.
@Suite("Adapter selection")
struct AdapterSelectionTests {
    typealias Adapter = AdapterSelection.Adapter
    var selection = AdapterSelection(policy: .init(order: ["hci1", "hci2"]))
    var now = Timestamp.zero
    var hci1 = Adapter(name: "hci1", powered: true)
    var hci2 = Adapter(name: "hci2", powered: true)

    /// One report of both adapters (nil: not present), one second later.
    mutating func report(_ adapters: [Adapter], exchange: Bool = false, after: Duration = .seconds(1)) -> String? {
        now = now + after
        selection.update(adapters, exchangeActive: exchange, at: now)
        return selection.current
    }

    @Test mutating func thePreferredUsableAdapterIsTaken() {
        #expect(report([hci2, hci1]) == "hci1")
        var off = hci1
        off.powered = false
        var fresh = AdapterSelection(policy: .init(order: ["hci1", "hci2"]))
        fresh.update([off, hci2], exchangeActive: false, at: now)
        #expect(fresh.current == "hci2")
    }

    @Test mutating func autoOrdersByIndexNotByName() {
        selection = AdapterSelection(policy: .init(order: nil))
        let hci10 = Adapter(name: "hci10", powered: true)
        #expect(report([hci10, hci2]) == "hci2")
        #expect(report([hci10]) == "hci10")
    }

    @Test mutating func onlyListedAdaptersAreUsed() {
        let hci0 = Adapter(name: "hci0", powered: true)
        #expect(report([hci0]) == nil)
        #expect(report([hci0, hci2]) == "hci2")
    }

    @Test(arguments: ["removed", "powered off", "blocked", "unfit"])
    mutating func anAdapterThatStopsBeingUsableIsLeftAtOnce(how: String) {
        #expect(report([hci1, hci2]) == "hci1")
        var broken = [hci2]
        var changed = hci1
        switch how {
        case "powered off": changed.powered = false
        case "blocked": changed.blocked = true
        case "unfit": changed.fit = false
        default: break
        }
        if how != "removed" { broken.append(changed) }
        // Even in the middle of an exchange: the adapter in use cannot carry it any more.
        #expect(report(broken, exchange: true, after: .milliseconds(1)) == "hci2")
    }

    @Test mutating func itReturnsOnlyAfterThePreferredOneWasSteadyAndBetweenExchanges() {
        #expect(report([hci2]) == "hci2")
        // hci1 plugged in: not taken while it has been usable for less than 30 s.
        #expect(report([hci1, hci2]) == "hci2")
        #expect(report([hci1, hci2], after: .seconds(28)) == "hci2")
        // A blip (powered off a moment) starts its 30 s again.
        var off = hci1
        off.powered = false
        #expect(report([off, hci2]) == "hci2")
        #expect(report([hci1, hci2]) == "hci2")
        #expect(report([hci1, hci2], after: .seconds(29)) == "hci2")
        // Steady for 30 s, but an exchange runs: it waits for the exchange.
        #expect(report([hci1, hci2], exchange: true) == "hci2")
        #expect(report([hci1, hci2]) == "hci1")
    }

    @Test mutating func aStuckAdapterIsLeftAndNotTakenBackDuringItsQuarantine() {
        #expect(report([hci1, hci2]) == "hci1")
        selection.quarantine("hci1", at: now)
        #expect(report([hci1, hci2], after: .milliseconds(1)) == "hci2")
        // Usable by BlueZ's account all along, but stuck: not before 600 s, then after 30 s steady.
        #expect(report([hci1, hci2], after: .seconds(598)) == "hci2")
        #expect(report([hci1, hci2], after: .seconds(2)) == "hci2")
        #expect(report([hci1, hci2], after: .seconds(29)) == "hci2")
        #expect(report([hci1, hci2], after: .seconds(1)) == "hci1")
    }

    @Test mutating func aStandbyIsOnlyAnotherUsableAdapter() {
        #expect(report([hci1]) == "hci1")
        #expect(!selection.hasStandby([hci1], at: now))
        var off = hci2
        off.powered = false
        #expect(!selection.hasStandby([hci1, off], at: now))
        #expect(selection.hasStandby([hci1, hci2], at: now))
        selection.quarantine("hci2", at: now)
        #expect(!selection.hasStandby([hci1, hci2], at: now))
    }

    @Test mutating func aLoneStuckAdapterIsKeptForItsLadderAndLeftForOneThatIsPluggedIn() {
        #expect(report([hci1]) == "hci1")
        selection.quarantine("hci1", at: now)
        #expect(report([hci1]) == "hci1")
        #expect(report([hci1, hci2]) == "hci2")
        // Both stuck: the one in use stays (its ladder retries), no flapping between them.
        selection.quarantine("hci2", at: now)
        #expect(report([hci1, hci2]) == "hci2")
        #expect(report([hci1, hci2], after: .seconds(60)) == "hci2")
    }

    @Test mutating func aStuckAdapterHeardAgainIsUsableAgain() {
        #expect(report([hci1]) == "hci1")
        selection.quarantine("hci1", at: now)
        #expect(report([hci1]) == "hci1")
        // The ladder's next power cycle brought it back: an adapter plugged in now is not needed.
        selection.recovered("hci1")
        #expect(report([hci1, hci2]) == "hci1")
    }

    @Test mutating func withNothingUsableTheBestPresentAdapterIsKeptSoTheStateSaysWhy() {
        var unfit = hci1
        unfit.fit = false
        var off = hci2
        off.powered = false
        // Fit before unfit: the state then says "off", which a person can fix.
        #expect(report([unfit, off]) == "hci2")
        #expect(report([]) == nil)
        #expect(report([unfit]) == "hci1")
    }
}
