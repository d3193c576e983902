import Testing

@testable import AccessCore

/// Open the next door (issue #13, item 2; the SDK's `startOpeningNextDoor(expiry:)`): for a
/// few seconds the auto range is widened to the manual range, once.
@Suite("Open the next door", .timeLimit(.minutes(5)))
struct OpenNextTests {
    var controller = AccessController(
        automaticAccessEnabled: false,
        credentials: CredentialAvailability(mobileSites: [Fixtures.siteTag]))
    var now = Timestamp.zero
    var timers: [AccessController.Timer: Timestamp] = [:]
    var started: [ReaderID] = []
    var closed: [AutoConnectMachine.OpenNextEnd] = []

    /// A reader in manual range (path loss 30: auto 20, manual 40).
    static func nearby(_ id: UInt32 = 0x2A01, pathLoss: Double = 30) -> ReaderAttributes {
        var reader = AutoConnectTests.reader(id, pathLoss: pathLoss)
        reader.isInAutoConnectRange = false
        return reader
    }

    @discardableResult
    mutating func send(_ input: AccessController.Input) -> [AccessController.Action] {
        let actions = controller.handle(input, at: now)
        for action in actions {
            switch action {
            case .startTimer(let timer, let delay): timers[timer] = now + delay
            case .cancelTimer(let timer): timers[timer] = nil
            case .startExchange(let reader, _, _): started.append(reader)
            case .openNextClosed(let end): closed.append(end)
            default: break
            }
        }
        return actions
    }

    mutating func wait(_ duration: Duration) {
        let end = now + duration
        while let (timer, deadline) = timers.filter({ $0.value <= end }).min(by: { $0.value < $1.value }) {
            now = deadline
            timers[timer] = nil
            send(.timerFired(timer))
        }
        now = end
    }

    mutating func observe(_ reader: ReaderAttributes, othersHeard: Bool = false) {
        send(.readerObserved(reader, isInAutoConnectRange: reader.isInAutoConnectRange, othersHeard: othersHeard))
    }

    /// Standing in manual range: nothing happens until the person asks, then the door opens
    /// at the next advertisement, and the window is used up.
    @Test mutating func theNextReaderInManualRangeIsOpenedOnce() {
        observe(Self.nearby())
        #expect(started.isEmpty)
        send(.openNext(expiry: .seconds(5)))
        observe(Self.nearby())
        #expect(started == [ReaderID(0x2A01)])
        #expect(closed == [.used(ReaderID(0x2A01))])
        #expect(timers[.automatic(.openNextExpiry)] == nil)
        send(.exchangeEnded(ReaderID(0x2A01), .decided(AccessResult(decision: .granted, mode: .access))))
        wait(.seconds(1))
        observe(Self.nearby())
        #expect(started.count == 1, "once")
    }

    @Test mutating func nothingOpensAfterTheWindowExpires() {
        send(.openNext(expiry: .seconds(5)))
        observe(Self.nearby(pathLoss: 45))  // beyond manual range
        wait(.seconds(5))
        #expect(closed == [.expired])
        observe(Self.nearby())
        #expect(started.isEmpty)
    }

    @Test mutating func aCancelledWindowOpensNothing() {
        send(.openNext(expiry: .seconds(5)))
        send(.cancelOpenNext)
        #expect(closed == [.cancelled] && timers.isEmpty)
        observe(Self.nearby())
        #expect(started.isEmpty)
        // Nothing open: nothing to cancel.
        #expect(send(.cancelOpenNext).isEmpty)
    }

    /// Two readers within manual range: the nearer is chosen after the selection window.
    @Test mutating func theNearerOfTwoIsChosen() {
        send(.openNext(expiry: .seconds(5)))
        observe(Self.nearby(0x2A01, pathLoss: 35), othersHeard: true)
        observe(Self.nearby(0x2A02, pathLoss: 25), othersHeard: true)
        #expect(started.isEmpty)
        wait(.milliseconds(200))
        #expect(started == [ReaderID(0x2A02)])
    }

    /// Eligible as for automatic access: a reader that offers none, one the scope denies, one
    /// of a site without a credential is not opened.
    @Test mutating func onlyEligibleReadersAreOpened() {
        send(.openNext(expiry: .seconds(5)))
        var manualOnly = Self.nearby(0x2A01)
        manualOnly.flags = [.manualConnectEnabled]
        observe(manualOnly)
        var denied = Self.nearby(0x2A02)
        denied.scope = ReaderScope(configuration: [ReaderID(0x2A02): .init(listing: .denied)])
            .effective(for: ReaderID(0x2A02), offering: denied.flags)
        observe(denied)
        var otherSite = Self.nearby(0x2A03)
        otherSite.siteTag = SiteTag(0x0BAD)
        observe(otherSite)
        #expect(started.isEmpty)
        observe(Self.nearby(0x2A04))
        #expect(started == [ReaderID(0x2A04)])
    }

    /// The person asked for this door now: a reader just opened automatically (spent, in its
    /// cooldown) is opened again.
    @Test mutating func theCooldownDoesNotApply() {
        send(.automaticAccessChanged(true))
        var atTheDoor = AutoConnectTests.reader(0x2A01, pathLoss: 10)
        observe(atTheDoor)
        #expect(started == [ReaderID(0x2A01)])
        send(.exchangeEnded(ReaderID(0x2A01), .decided(AccessResult(decision: .granted, mode: .access))))
        observe(atTheDoor)
        #expect(started.count == 1, "spent: not again on its own")
        send(.openNext(expiry: .seconds(5)))
        atTheDoor.measuredPathLoss = 12
        observe(atTheDoor)
        #expect(started.count == 2)
        #expect(closed == [.used(ReaderID(0x2A01))])
    }

    /// With automatic access on, the door opened in auto range uses the window too: it was the
    /// next door, and a second one within manual range is not opened after it.
    @Test mutating func anAutomaticOpeningUsesTheWindow() {
        send(.automaticAccessChanged(true))
        send(.openNext(expiry: .seconds(5)))
        observe(AutoConnectTests.reader(0x2A01, pathLoss: 10))
        #expect(closed == [.used(ReaderID(0x2A01))])
        observe(Self.nearby(0x2A02))
        #expect(started == [ReaderID(0x2A01)])
    }

    /// A busy adapter: the chosen reader waits for the slot, within the window.
    @Test mutating func aBusySlotIsWaitedFor() {
        send(.request(RequestID(1), ReaderID(0x2A09), .access, reader: AutoConnectTests.reader(0x2A09)))
        send(.openNext(expiry: .seconds(5)))
        observe(Self.nearby())
        #expect(started == [ReaderID(0x2A09)])
        send(.exchangeEnded(ReaderID(0x2A09), .decided(AccessResult(decision: .granted, mode: .access))))
        #expect(started == [ReaderID(0x2A09), ReaderID(0x2A01)])
    }
}
