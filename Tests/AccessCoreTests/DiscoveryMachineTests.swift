import Testing

@testable import AccessCore

/// Discovery follows the setting, the SDK state and the adapter, one BlueZ call at a time.
@Suite("Discovery machine", .timeLimit(.minutes(5)))
struct DiscoveryMachineTests {
    var machine = DiscoveryMachine()
    var now = Timestamp.zero

    mutating func send(_ input: DiscoveryMachine.Input) -> [DiscoveryMachine.Action] {
        machine.handle(input, at: now)
    }

    @Test mutating func startsWhenWantedPossibleAndAnAdapterIsThere() {
        #expect(send(.conditionsChanged(scanningEnabled: true, canScan: true)) == [])
        #expect(
            send(.adapterChanged(path: "/org/bluez/hci0", discovering: false)) == [.start(adapter: "/org/bluez/hci0")])
        #expect(machine.state == .starting(adapter: "/org/bluez/hci0"))
        #expect(send(.startFinished(.started)) == [])
        #expect(machine.isActive)
    }

    @Test mutating func aChangeDuringACallIsActedOnWhenTheCallEnds() {
        _ = send(.conditionsChanged(scanningEnabled: true, canScan: true))
        _ = send(.adapterChanged(path: "/org/bluez/hci0", discovering: false))
        // Scanning switched off while StartDiscovery is under way: no second call now…
        #expect(send(.conditionsChanged(scanningEnabled: false, canScan: true)) == [])
        // …and the stop goes out the moment the start is answered, not a tick later.
        #expect(send(.startFinished(.started)) == [.stop(adapter: "/org/bluez/hci0")])
        #expect(send(.conditionsChanged(scanningEnabled: true, canScan: true)) == [])
        #expect(send(.stopFinished) == [.start(adapter: "/org/bluez/hci0")])
    }

    @Test mutating func aFailedStartIsTriedAgainAtTheNextTickNotInALoop() {
        _ = send(.conditionsChanged(scanningEnabled: true, canScan: true))
        _ = send(.adapterChanged(path: "/org/bluez/hci0", discovering: false))
        #expect(send(.startFinished(.failed)) == [])
        #expect(machine.state == .idle(adapter: "/org/bluez/hci0"))
        #expect(send(.tick) == [.start(adapter: "/org/bluez/hci0")])
    }

    @Test mutating func someoneElsesDiscoveryCountsAsOurs() {
        _ = send(.conditionsChanged(scanningEnabled: true, canScan: true))
        _ = send(.adapterChanged(path: "/org/bluez/hci0", discovering: true))
        #expect(send(.startFinished(.alreadyInProgress)) == [])
        #expect(machine.isActive)
    }

    @Test mutating func bluezEndingTheSessionStartsItAgain() {
        _ = send(.conditionsChanged(scanningEnabled: true, canScan: true))
        _ = send(.adapterChanged(path: "/org/bluez/hci0", discovering: false))
        _ = send(.startFinished(.started))
        _ = send(.adapterChanged(path: "/org/bluez/hci0", discovering: true))
        #expect(
            send(.adapterChanged(path: "/org/bluez/hci0", discovering: false)) == [.start(adapter: "/org/bluez/hci0")])
    }

    @Test mutating func poweredOffWaitsWithoutCallingBlueZ() {
        _ = send(.conditionsChanged(scanningEnabled: true, canScan: false))
        #expect(send(.adapterChanged(path: "/org/bluez/hci0", discovering: false)) == [])
        #expect(send(.tick) == [])
        #expect(send(.conditionsChanged(scanningEnabled: true, canScan: true)) == [.start(adapter: "/org/bluez/hci0")])
    }

    @Test mutating func theAdapterGoingAwayForgetsTheCallInFlight() {
        _ = send(.conditionsChanged(scanningEnabled: true, canScan: true))
        _ = send(.adapterChanged(path: "/org/bluez/hci0", discovering: false))
        #expect(send(.adapterChanged(path: nil, discovering: false)) == [])
        #expect(send(.startFinished(.started)) == [])
        #expect(machine.state == .noAdapter)
        #expect(
            send(.adapterChanged(path: "/org/bluez/hci1", discovering: false)) == [.start(adapter: "/org/bluez/hci1")])
    }

    /// The recovery ladder's first rung: stop, then start again once stopped; not when our
    /// discovery does not run.
    @Test mutating func aRestartStopsAndStartsAgain() {
        #expect(send(.restart) == [])
        _ = send(.conditionsChanged(scanningEnabled: true, canScan: true))
        _ = send(.adapterChanged(path: "/org/bluez/hci0", discovering: false))
        #expect(send(.restart) == [], "starting: nothing to restart yet")
        _ = send(.startFinished(.started))
        #expect(send(.restart) == [.stop(adapter: "/org/bluez/hci0")])
        #expect(send(.restart) == [], "one stop at a time")
        #expect(send(.stopFinished) == [.start(adapter: "/org/bluez/hci0")])
    }

    @Test mutating func switchingOffStopsOnlyOurOwnDiscovery() {
        _ = send(.conditionsChanged(scanningEnabled: false, canScan: true))
        // Another client discovers: not ours to stop.
        #expect(send(.adapterChanged(path: "/org/bluez/hci0", discovering: true)) == [])
        _ = send(.conditionsChanged(scanningEnabled: true, canScan: true))
        _ = send(.startFinished(.alreadyInProgress))
        #expect(send(.conditionsChanged(scanningEnabled: false, canScan: true)) == [.stop(adapter: "/org/bluez/hci0")])
    }
}
