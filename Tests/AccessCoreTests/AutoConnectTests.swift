import Testing

@testable import AccessCore

/// Stories of a person walking up to doors, told to the access controller with a virtual clock.
@Suite("Auto-connect", .timeLimit(.minutes(5)))
struct AutoConnectTests {
    var controller = AccessController(
        automaticAccessEnabled: true,
        credentials: CredentialAvailability(mobileSites: [Fixtures.siteTag]))
    var clock = VirtualClock()
    /// Timers the controller asked for and has not cancelled, with their deadlines.
    var timers: [AccessController.Timer: Timestamp] = [:]
    var started: [ReaderID] = []

    static func reader(
        _ id: UInt32 = 0x2A01, pathLoss: Double = 10,
        flags: ReaderFlags = [.autoConnectEnabled, .manualConnectEnabled],
        kind: ReaderKind = .gallagherStyle
    ) -> ReaderAttributes {
        ReaderAttributes(
            id: ReaderID(id), name: nil, kind: kind, siteTag: Fixtures.siteTag, address: Fixtures.address,
            rssi: -69, txPower: -59, measuredPathLoss: pathLoss, distance: .near, autoConnectPathLoss: 20,
            manualConnectPathLoss: 40, flags: flags, isInAutoConnectRange: true, lastSeen: .zero)
    }

    @discardableResult
    mutating func send(_ input: AccessController.Input) -> [AccessController.Action] {
        let actions = controller.handle(input, at: clock.now)
        for action in actions {
            switch action {
            case .startTimer(let timer, let delay): timers[timer] = clock.now + delay
            case .cancelTimer(let timer): timers[timer] = nil
            case .startExchange(let reader, _, _): started.append(reader)
            default: break
            }
        }
        return actions
    }

    /// Moves the clock, firing due timers in deadline order.
    mutating func wait(_ duration: Duration) {
        let end = clock.now + duration
        while let (timer, deadline) = timers.filter({ $0.value <= end }).min(by: { $0.value < $1.value }) {
            clock.advance(deadline - clock.now)
            timers[timer] = nil
            send(.timerFired(timer))
        }
        clock.advance(end - clock.now)
    }

    mutating func approach(_ reader: ReaderAttributes = reader()) {
        send(.readerObserved(reader, isInAutoConnectRange: true))
    }

    mutating func leave(_ id: UInt32 = 0x2A01) {
        send(.readerObserved(Self.reader(id, pathLoss: 35), isInAutoConnectRange: false))
    }

    mutating func finish(
        _ id: UInt32 = 0x2A01, _ outcome: ExchangeOutcome = .decided(AccessResult(decision: .granted, mode: .access))
    ) {
        send(.exchangeEnded(ReaderID(id), outcome))
    }

    @Test mutating func firesOnceAfterTheSelectionWindow() {
        approach()
        #expect(started.isEmpty)
        wait(.milliseconds(200))
        #expect(started == [Fixtures.readerID])
        // More reports while still in range: nothing new.
        for _ in 0..<20 {
            approach()
            wait(.milliseconds(100))
        }
        #expect(started == [Fixtures.readerID])
    }

    /// No other reader heard: no nearer one can turn up, so the window is not waited for.
    @Test mutating func aReaderHeardAloneGoesAtOnce() {
        send(.readerObserved(Self.reader(), isInAutoConnectRange: true, othersHeard: false))
        #expect(started == [Fixtures.readerID])
        #expect(timers[.automatic(.selection)] == nil)
        // More reports while still in range: nothing new.
        for _ in 0..<20 {
            approach()
            wait(.milliseconds(100))
        }
        #expect(started == [Fixtures.readerID])
    }

    @Test mutating func completionIsReported() {
        approach()
        wait(.milliseconds(200))
        let actions = send(.exchangeEnded(Fixtures.readerID, .decided(AccessResult(decision: .granted, mode: .access))))
        #expect(
            actions.contains(
                .completed(
                    Fixtures.readerID, .automatic,
                    .decided(AccessResult(decision: .granted, mode: .access)))))
    }

    @Test mutating func staysSpentWhileInRangeAfterAnExchange() {
        approach()
        wait(.milliseconds(200))
        finish()
        for _ in 0..<300 {
            approach()
            wait(.milliseconds(100))
        }  // 30 s standing at the door
        #expect(started.count == 1)
    }

    @Test mutating func leavingAndReturningWithinTheCooldownDoesNotFire() {
        approach()
        wait(.milliseconds(200))
        finish()
        wait(.seconds(2))
        leave()
        wait(.seconds(2))
        approach()
        wait(.seconds(1))
        #expect(started.count == 1)
        // Still in range when the cooldown ends: a new approach began after leaving, so it fires.
        wait(.seconds(5))
        approach()
        wait(.milliseconds(300))
        #expect(started.count == 2)
    }

    @Test mutating func walkingAwayAndBackAfterTheCooldownFiresAgain() {
        approach()
        wait(.milliseconds(200))
        finish()
        leave()
        wait(.seconds(11))
        approach()
        wait(.milliseconds(200))
        #expect(started == [Fixtures.readerID, Fixtures.readerID])
    }

    @Test mutating func needsAutomaticAccessEnabled() {
        send(.automaticAccessChanged(false))
        approach()
        wait(.seconds(1))
        #expect(started.isEmpty)
        send(.automaticAccessChanged(true))
        #expect(started == [Fixtures.readerID])
    }

    @Test mutating func needsAMatchingCredential() {
        send(.credentialsChanged(.none))
        approach()
        wait(.seconds(1))
        #expect(started.isEmpty)
        // An Aperio credential does not open a Gallagher-style reader.
        send(.credentialsChanged(CredentialAvailability(aperioSites: [Fixtures.siteTag])))
        #expect(started.isEmpty)
        send(.credentialsChanged(CredentialAvailability(mobileSites: [Fixtures.siteTag])))
        #expect(started == [Fixtures.readerID])
    }

    @Test mutating func aperioLockNeedsTheAperioCredential() {
        approach(Self.reader(kind: .aperioStyle))
        wait(.seconds(1))
        #expect(started.isEmpty)
        send(
            .credentialsChanged(
                CredentialAvailability(mobileSites: [Fixtures.siteTag], aperioSites: [Fixtures.siteTag])))
        #expect(started == [Fixtures.readerID])
    }

    @Test mutating func needsTheReaderToAllowAutoConnect() {
        approach(Self.reader(flags: [.manualConnectEnabled]))
        wait(.seconds(1))
        #expect(started.isEmpty)
    }

    @Test mutating func theNearerOfTwoReadersIsChosen() {
        approach(Self.reader(1, pathLoss: 15))
        wait(.milliseconds(100))
        approach(Self.reader(2, pathLoss: 8))
        wait(.milliseconds(100))
        #expect(started == [ReaderID(2)])
        // One exchange per adapter: the other waits for the slot, then goes.
        approach(Self.reader(1, pathLoss: 15))
        #expect(started == [ReaderID(2)])
        finish(2)
        #expect(started == [ReaderID(2), ReaderID(1)])
    }

    @Test mutating func transientFailuresBackOffByClassWithACap() {
        approach()
        wait(.milliseconds(200))
        var retryTimes: [Duration] = []
        var last = clock.now
        for _ in 0..<4 {
            finish(0x2A01, .failed(.connectionAborted))
            let before = started.count
            while started.count == before {
                approach()
                wait(.milliseconds(10))
            }
            retryTimes.append(clock.now - last)
            last = clock.now
        }
        // 250 ms doubling: 250, 500, 1000, 2000 (to the 10 ms step of the loop).
        let expected: [Duration] = [.milliseconds(250), .milliseconds(500), .milliseconds(1000), .milliseconds(2000)]
        for (measured, wanted) in zip(retryTimes, expected) {
            #expect(measured >= wanted && measured <= wanted + .milliseconds(10), "\(measured) vs \(wanted)")
        }
        // The fifth failure exhausts the retries: spent until the reader leaves.
        finish(0x2A01, .failed(.connectionAborted))
        for _ in 0..<100 {
            approach()
            wait(.milliseconds(100))
        }
        #expect(started.count == 5)
    }

    @Test func backoffDelaysAreCapped() {
        let policy = RetryPolicy(maximumRetries: 10, maximumDelay: .seconds(8))
        #expect(policy.delay(after: .adapterBusy, retry: 1) == .seconds(1))
        #expect(policy.delay(after: .adapterBusy, retry: 3) == .seconds(4))
        #expect(policy.delay(after: .adapterBusy, retry: 4) == .seconds(8))
        #expect(policy.delay(after: .adapterBusy, retry: 9) == .seconds(8))
    }

    @Test(arguments: [ExchangeFailure.badReaderSignature, .invalidatedCredential, .secondFactorRequired])
    mutating func permanentFailuresWaitForANewApproach(_ failure: ExchangeFailure) {
        approach()
        wait(.milliseconds(200))
        finish(0x2A01, .failed(failure))
        for _ in 0..<150 {
            approach()
            wait(.milliseconds(100))
        }
        #expect(started.count == 1)
        leave()
        wait(.seconds(1))
        approach()
        wait(.milliseconds(200))
        #expect(started.count == 2)
    }

    @Test mutating func deniedIsFinalForTheApproach() {
        approach()
        wait(.milliseconds(200))
        finish(0x2A01, .decided(AccessResult(decision: .deniedZone, mode: .access)))
        for _ in 0..<150 {
            approach()
            wait(.milliseconds(100))
        }
        #expect(started.count == 1)
    }

    @Test mutating func leavingDuringBackoffCancelsTheRetry() {
        approach()
        wait(.milliseconds(200))
        finish(0x2A01, .failed(.timedOut))
        leave()
        #expect(timers.isEmpty)
        wait(.seconds(5))
        #expect(started.count == 1)
    }

    @Test mutating func aManualExchangeHoldsTheSlot() {
        send(.request(RequestID(1), ReaderID(9), .access, reader: Self.reader(9)))
        #expect(started == [ReaderID(9)])
        approach()
        wait(.seconds(1))
        #expect(started == [ReaderID(9)])
        send(.exchangeEnded(ReaderID(9), .decided(AccessResult(decision: .granted, mode: .access))))
        #expect(started == [ReaderID(9), Fixtures.readerID])
    }

    // MARK: Connecting early

    mutating func connectEarly() {
        controller = AccessController(
            automatic: .init(connectEarly: true), automaticAccessEnabled: true,
            credentials: CredentialAvailability(mobileSites: [Fixtures.siteTag]))
    }

    /// Heard within manual range (path loss 30 of 40), outside auto range (20).
    @discardableResult
    mutating func nearby(_ id: UInt32 = 0x2A01) -> [AccessController.Action] {
        send(.readerObserved(Self.reader(id, pathLoss: 30), isInAutoConnectRange: false, othersHeard: false))
    }

    @Test mutating func aNearbyReadersLinkIsPreparedOnceAndTheExchangeTakesItOver() {
        connectEarly()
        #expect(nearby().contains(.prepareLink(Fixtures.readerID)))
        wait(.seconds(2))
        #expect(!nearby().contains(.prepareLink(Fixtures.readerID)), "prepared twice")
        let actions = send(.readerObserved(Self.reader(), isInAutoConnectRange: true, othersHeard: false))
        #expect(started == [Fixtures.readerID])
        #expect(actions.contains(.cancelTimer(.automatic(.holdLimit(Fixtures.readerID)))))
        #expect(!actions.contains(.releaseLink(Fixtures.readerID)), "the exchange's own link was dropped")
    }

    @Test mutating func anUnusedLinkIsDroppedAfterTheHoldLimitAndPreparedAgainOnlyAfterTheReaderWent() {
        connectEarly()
        nearby()
        let dropped = controller.handle(.timerFired(.automatic(.holdLimit(Fixtures.readerID))), at: clock.now)
        #expect(dropped.contains(.releaseLink(Fixtures.readerID)))
        #expect(
            !nearby().contains(.prepareLink(Fixtures.readerID)),
            "a person sitting near the door is connected to again and again")
        #expect(send(.readerUnavailable(Fixtures.readerID)).isEmpty)
        #expect(nearby().contains(.prepareLink(Fixtures.readerID)))
    }

    @Test mutating func thePreparedLinkGoesWithTheReaderOrWithAutomaticAccess() {
        connectEarly()
        nearby()
        #expect(send(.readerUnavailable(Fixtures.readerID)).contains(.releaseLink(Fixtures.readerID)))
        nearby()
        #expect(send(.automaticAccessChanged(false)).contains(.releaseLink(Fixtures.readerID)))
        #expect(!nearby().contains(.prepareLink(Fixtures.readerID)))
    }

    @Test mutating func nothingIsPreparedWithoutConnectEarlyACredentialOrAutoConnect() {
        #expect(nearby().isEmpty)
        connectEarly()
        send(.credentialsChanged(.none))
        #expect(nearby().isEmpty)
        send(.credentialsChanged(CredentialAvailability(mobileSites: [Fixtures.siteTag])))
        let manualOnly = Self.reader(0x2A02, pathLoss: 30, flags: [.manualConnectEnabled])
        #expect(send(.readerObserved(manualOnly, isInAutoConnectRange: false, othersHeard: false)).isEmpty)
        // Beyond manual range (45 of 40): not yet.
        #expect(
            send(.readerObserved(Self.reader(pathLoss: 45), isInAutoConnectRange: false, othersHeard: false)).isEmpty)
    }

    @Test mutating func anotherReaderChosenDropsThePreparedLinkFirst() {
        connectEarly()
        nearby(0x2A02)
        let actions = send(.readerObserved(Self.reader(), isInAutoConnectRange: true, othersHeard: false))
        let release = actions.firstIndex(of: .releaseLink(ReaderID(0x2A02)))
        let start = actions.firstIndex(of: .startExchange(Fixtures.readerID, .automatic, .access))
        #expect(release != nil && start != nil && release! < start!, "\(actions)")
    }

    /// A reader that stops advertising once connected (no presence advertisements) could
    /// not be followed over a held link: the link goes, and the reader is never connected
    /// to early again; its exchanges connect at auto range as without `connect_early`.
    @Test mutating func aReaderSilentOverItsLinkIsNotConnectedToEarlyAgain() {
        connectEarly()
        nearby()
        #expect(
            send(.linkPrepared(Fixtures.readerID)).contains(
                .startTimer(
                    .automatic(.presenceWait(Fixtures.readerID)),
                    after: .seconds(3))))
        wait(.seconds(3))
        #expect(controller.automatic.withoutPresence == [Fixtures.readerID])
        send(.readerUnavailable(Fixtures.readerID))
        #expect(!nearby().contains(.prepareLink(Fixtures.readerID)))
        send(.readerObserved(Self.reader(), isInAutoConnectRange: true, othersHeard: false))
        #expect(started == [Fixtures.readerID])
    }

    @Test mutating func presenceHeardOverTheLinkKeepsIt() {
        connectEarly()
        nearby()
        send(.linkPrepared(Fixtures.readerID))
        #expect(send(.presenceHeard(Fixtures.readerID)) == [.cancelTimer(.automatic(.presenceWait(Fixtures.readerID)))])
        wait(.seconds(10))
        #expect(controller.automatic.preparedReader == Fixtures.readerID)
        #expect(controller.automatic.withoutPresence.isEmpty)
    }

    /// Readers of two sites in range: the site whose credential has the higher priority goes
    /// first, even when its reader is further (issue #13, item 3).
    @Test mutating func theHigherPrioritySiteGoesFirst() {
        let other = SiteTag(0x0B0B_0001)
        var availability = CredentialAvailability(mobileSites: [Fixtures.siteTag, other])
        availability.priorities[other] = 5
        send(.credentialsChanged(availability))
        var far = Self.reader(0x2B01, pathLoss: 15)
        far.siteTag = other
        send(.readerObserved(Self.reader(0x2A01, pathLoss: 5), isInAutoConnectRange: true))
        send(.readerObserved(far, isInAutoConnectRange: true))
        wait(.milliseconds(200))
        #expect(started == [ReaderID(0x2B01)])
    }
}
