import Testing

@testable import AccessCore

/// The limits that make holding a link safe to leave on (issue #15, item 1): the held link
/// counts against the connection limit, gives way to any exchange that needs its slot, is
/// handed to a manual exchange with its reader, and goes when the reader is heard beyond
/// manual range or after the configured hold time.
extension AutoConnectTests {
    mutating func connectEarly(limit: Int, holdLimit: Duration = .seconds(20)) {
        controller = AccessController(
            slotLimit: limit, automatic: .init(connectEarly: true, holdLimit: holdLimit),
            automaticAccessEnabled: true,
            credentials: CredentialAvailability(mobileSites: [Fixtures.siteTag]))
    }

    @Test mutating func theHeldLinkCountsAgainstTheConnectionLimit() {
        connectEarly(limit: 1)
        nearby()
        #expect(controller.slots.held == Fixtures.readerID)
        #expect(controller.slots.linkCount == 1 && !controller.slots.canHoldLink)
        // A manual exchange with another reader needs the only slot: the held link is dropped
        // before it starts, so the adapter never has two links.
        let actions = send(.request(RequestID(1), ReaderID(0x2A02), .access, reader: Self.reader(0x2A02, pathLoss: 30)))
        let release = actions.firstIndex(of: .releaseLink(Fixtures.readerID))
        let start = actions.firstIndex(of: .startExchange(ReaderID(0x2A02), .manual(RequestID(1)), .access))
        #expect(release != nil && start != nil && release! < start!, "\(actions)")
        #expect(controller.slots.held == nil && controller.slots.linkCount == 1)
        // While that exchange runs, no link is held for another reader.
        #expect(!nearby(0x2A03).contains(.prepareLink(ReaderID(0x2A03))))
    }

    @Test mutating func aSecondSlotLetsTheHeldLinkStayBesideAManualExchange() {
        connectEarly(limit: 2)
        nearby()
        let actions = send(.request(RequestID(1), ReaderID(0x2A02), .access, reader: Self.reader(0x2A02, pathLoss: 30)))
        #expect(!actions.contains(.releaseLink(Fixtures.readerID)), "\(actions)")
        #expect(controller.slots.linkCount == 2 && controller.slots.held == Fixtures.readerID)
    }

    @Test mutating func aManualRequestToTheHeldReaderTakesItsLink() {
        connectEarly(limit: 1)
        nearby()
        let actions = send(.request(RequestID(1), Fixtures.readerID, .access, reader: Self.reader(pathLoss: 30)))
        #expect(started == [Fixtures.readerID])
        #expect(!actions.contains(.releaseLink(Fixtures.readerID)), "the exchange's own link was dropped: \(actions)")
        #expect(actions.contains(.cancelTimer(.automatic(.holdLimit(Fixtures.readerID)))))
        #expect(controller.automatic.preparedReader == nil && controller.slots.linkCount == 1)
    }

    @Test mutating func walkingBeyondManualRangeDropsTheLink() {
        connectEarly(limit: 1)
        nearby()
        let actions = send(.readerObserved(Self.reader(pathLoss: 45), isInAutoConnectRange: false, othersHeard: false))
        #expect(actions.contains(.releaseLink(Fixtures.readerID)), "\(actions)")
        #expect(controller.slots.held == nil && controller.slots.canHoldLink)
    }

    @Test mutating func theHoldTimeIsTheConfiguredOne() {
        connectEarly(limit: 1, holdLimit: .seconds(7))
        #expect(nearby().contains(.startTimer(.automatic(.holdLimit(Fixtures.readerID)), after: .seconds(7))))
        let dropped = controller.handle(.timerFired(.automatic(.holdLimit(Fixtures.readerID))), at: clock.now)
        #expect(dropped.contains(.releaseLink(Fixtures.readerID)))
        #expect(controller.slots.held == nil)
    }
}
