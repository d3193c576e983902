import Testing

@testable import AccessCore

/// The order of every link's Connect and Disconnect, and who owns a link (`LinkMachine`):
/// driven call by call, as the exchange engine reports its BlueZ calls returning.
struct LinkMachineTests {
    static let reader = ReaderID(0x2A01)
    static let other = ReaderID(0x2A02)
    static let device = "/org/bluez/hci0/dev_00_BB_01_00_00_00"
    static let otherDevice = "/org/bluez/hci0/dev_00_BB_02_00_00_00"

    var links = LinkMachine()

    mutating func connectOf(_ actions: [LinkMachine.Action]) -> LinkMachine.ID? {
        for case .connect(let id, _, _) in actions { return id }
        return nil
    }

    @Test mutating func aHeldLinkLetGoWhileConnectingIsDroppedOnlyOnceItsConnectReturns() throws {
        let held = try #require(connectOf(links.handle(.hold(Self.reader, device: Self.device))))
        #expect(links.handle(.release(Self.reader)).isEmpty, "no Disconnect while the Connect is out")
        #expect(links.handle(.connectReturned(held, up: true)) == [.disconnect(held, device: Self.device)])
        #expect(links.held == nil)
    }

    /// Issue #31's defect in the core's terms: the exchange took the held link over while it
    /// connected, and ended first.
    @Test mutating func anExchangeEndingOnAHeldLinkStillConnectingWaitsForItsConnect() throws {
        let held = try #require(connectOf(links.handle(.hold(Self.reader, device: Self.device))))
        #expect(links.handle(.exchange(Self.reader, device: Self.device, run: 7)).isEmpty)
        #expect(links.handle(.exchangeEnded(run: 7)).isEmpty)
        #expect(links.handle(.connectReturned(held, up: true)) == [.disconnect(held, device: Self.device)])
    }

    @Test mutating func anExchangeTakesTheHeldLinkOverWhenItIsUp() throws {
        let held = try #require(connectOf(links.handle(.hold(Self.reader, device: Self.device))))
        #expect(links.handle(.connectReturned(held, up: true)) == [.prepared(held, Self.reader)])
        #expect(links.handle(.exchange(Self.reader, device: Self.device, run: 7)) == [.handOver(held, run: 7)])
        #expect(links.held == nil && links.link(ofRun: 7)?.id == held)
    }

    @Test mutating func aHeldLinkTakenOverWhileConnectingIsHandedOverWhenItsConnectReturns() throws {
        let held = try #require(connectOf(links.handle(.hold(Self.reader, device: Self.device))))
        #expect(links.handle(.exchange(Self.reader, device: Self.device, run: 7)).isEmpty)
        #expect(links.handle(.connectReturned(held, up: false)) == [.handOver(held, run: 7)])
    }

    @Test mutating func aConnectToADeviceWaitsForItsLastDisconnect() throws {
        let first = try #require(connectOf(links.handle(.exchange(Self.reader, device: Self.device, run: 1))))
        #expect(links.handle(.connectReturned(first, up: true)).isEmpty, "the exchange's task goes on")
        #expect(links.handle(.exchangeEnded(run: 1)) == [.disconnect(first, device: Self.device)])
        #expect(links.handle(.exchange(Self.reader, device: Self.device, run: 2)).isEmpty)
        let next = try #require(connectOf(links.handle(.disconnected(first))))
        #expect(links.link(ofRun: 2)?.id == next && links.links[next]?.phase == .connecting)
    }

    /// The controller gave the held link's slot away when it dropped it: the adapter never has
    /// more links than its limit, so the new link to another reader waits for the Disconnect.
    @Test mutating func aNewLinkWaitsForAHeldLinkDroppedToMakeRoom() throws {
        let held = try #require(connectOf(links.handle(.hold(Self.reader, device: Self.device))))
        _ = links.handle(.connectReturned(held, up: true))
        #expect(links.handle(.release(Self.reader)) == [.disconnect(held, device: Self.device)])
        #expect(links.handle(.exchange(Self.other, device: Self.otherDevice, run: 3)).isEmpty)
        let actions = links.handle(.disconnected(held))
        #expect(
            actions == [
                .connect(
                    try #require(links.link(ofRun: 3)?.id), device: Self.otherDevice, .exchange(Self.other, run: 3))
            ])
    }

    @Test mutating func anExchangeEndingBeforeItsConnectWasSentLeavesNothing() throws {
        let first = try #require(connectOf(links.handle(.exchange(Self.reader, device: Self.device, run: 1))))
        _ = links.handle(.connectReturned(first, up: true))
        _ = links.handle(.exchangeEnded(run: 1))
        _ = links.handle(.exchange(Self.reader, device: Self.device, run: 2))
        #expect(links.handle(.exchangeEnded(run: 2)).isEmpty, "never connected: nothing to drop")
        #expect(links.handle(.disconnected(first)).isEmpty)
        #expect(links.links.isEmpty)
    }

    @Test mutating func oneHeldLinkAtATimeAndLateReportsChangeNothing() throws {
        let held = try #require(connectOf(links.handle(.hold(Self.reader, device: Self.device))))
        #expect(links.handle(.hold(Self.other, device: Self.otherDevice)).isEmpty)
        _ = links.handle(.connectReturned(held, up: true))
        #expect(links.handle(.connectReturned(held, up: true)).isEmpty, "a second report of one Connect")
        _ = links.handle(.release(Self.reader))
        _ = links.handle(.disconnected(held))
        #expect(links.handle(.disconnected(held)).isEmpty && links.handle(.connectReturned(held, up: true)).isEmpty)
        #expect(links.links.isEmpty)
    }

    @Test mutating func stoppingDropsEveryLinkWhoseConnectWasSent() throws {
        _ = links.handle(.hold(Self.reader, device: Self.device))
        _ = links.handle(.exchange(Self.other, device: Self.otherDevice, run: 1))
        #expect(links.dropAll() == [Self.device, Self.otherDevice] && links.links.isEmpty)
    }
}
