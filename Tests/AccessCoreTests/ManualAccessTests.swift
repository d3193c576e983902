import Testing

@testable import AccessCore

@Suite("Manual access", .timeLimit(.minutes(5)))
struct ManualAccessTests {
    var controller = AccessController(credentials: CredentialAvailability(mobileSites: [Fixtures.siteTag]))
    let reader = AutoConnectTests.reader()
    let granted = ExchangeOutcome.decided(AccessResult(decision: .granted, mode: .access))

    mutating func request(
        _ id: UInt64, _ operation: ExchangeOperation = .access,
        reader: ReaderAttributes?
    ) -> [AccessController.Action] {
        controller.handle(.request(RequestID(id), Fixtures.readerID, operation, reader: reader), at: .zero)
    }

    @Test mutating func acceptedRequestStartsAnExchangeWithItsTimeout() {
        let actions = request(1, reader: reader)
        #expect(
            actions == [
                .startExchange(Fixtures.readerID, .manual(RequestID(1)), .access),
                .startTimer(.manual(RequestID(1)), after: .seconds(15)),
            ])
        let end = controller.handle(.exchangeEnded(Fixtures.readerID, granted), at: .seconds(1))
        #expect(
            end == [.cancelTimer(.manual(RequestID(1))), .completed(Fixtures.readerID, .manual(RequestID(1)), granted)])
    }

    /// A reload: the next request gets the new timeout; connecting early stays as it was.
    @Test mutating func reconfiguredTimeoutAppliesToTheNextRequest() {
        var automatic = controller.automatic.configuration
        automatic.connectEarly = true
        automatic.cooldown = .seconds(3)
        controller.reconfigure(automatic: automatic, manual: .init(timeout: .seconds(4)))
        #expect(request(1, reader: reader).last == .startTimer(.manual(RequestID(1)), after: .seconds(4)))
        #expect(controller.automatic.configuration.cooldown == .seconds(3))
        #expect(controller.automatic.configuration.connectEarly == false)
    }

    @Test mutating func unknownReaderIsUnavailable() {
        #expect(request(1, reader: nil) == [.refuse(RequestID(1), .readerNotHeard)])
        #expect(ManualRefusal.readerNotHeard.error == .readerUnavailable)
    }

    @Test mutating func manualConnectDisabledIsForbidden() {
        var noManual = reader
        noManual.flags = [.autoConnectEnabled]
        #expect(request(1, reader: noManual) == [.refuse(RequestID(1), .manualAccessNotOffered)])
        #expect(ManualRefusal.manualAccessNotOffered.error == .forbidden)
    }

    @Test mutating func actionsNeedTheActionsFlag() {
        #expect(request(1, .enumerateActions, reader: reader) == [.refuse(RequestID(1), .actionsNotOffered)])
        var withActions = reader
        withActions.flags.insert(.actionsEnabled)
        #expect(request(2, .performAction(1), reader: withActions).count == 2)
    }

    @Test mutating func noCredentialForTheSiteIsForbidden() {
        controller = AccessController(credentials: .none)
        #expect(request(1, reader: reader) == [.refuse(RequestID(1), .noCredentialForSite(Fixtures.siteTag))])
        #expect(ManualRefusal.noCredentialForSite(Fixtures.siteTag).error == .forbidden)
    }

    /// The SDK says `forbidden` for both; the cause tells a suspended credential from none.
    @Test mutating func aSuspendedCredentialIsNamedAsSuch() {
        controller = AccessController(
            credentials: CredentialAvailability(
                withheld: [.init(kind: .mobile, site: Fixtures.siteTag): .suspended]))
        let refusal = ManualRefusal.credentialNotActive(Fixtures.siteTag, .suspended)
        #expect(request(1, reader: reader) == [.refuse(RequestID(1), refusal)])
        #expect(refusal.error == .forbidden && refusal.cause == "credentialSuspended")
        // An Aperio credential withheld says nothing about a Gallagher-style reader.
        controller = AccessController(
            credentials: CredentialAvailability(
                withheld: [.init(kind: .aperio, site: Fixtures.siteTag): .revoked]))
        #expect(request(2, reader: reader) == [.refuse(RequestID(2), .noCredentialForSite(Fixtures.siteTag))])
    }

    @Test mutating func secondRequestWhileOneRunsIsTransactionInProgress() {
        _ = request(1, reader: reader)
        #expect(request(2, reader: reader) == [.refuse(RequestID(2), .readerBusy)])
        var other = reader
        other.id = ReaderID(7)
        // The adapter allows one exchange at a time by default.
        let actions = controller.handle(.request(RequestID(3), ReaderID(7), .access, reader: other), at: .zero)
        #expect(actions == [.refuse(RequestID(3), .noFreeSlot)])
        #expect(ManualRefusal.noFreeSlot.error == .transactionInProgress)
    }

    @Test mutating func aLargerSlotLimitAllowsParallelExchanges() {
        controller = AccessController(
            slotLimit: 2, credentials: CredentialAvailability(mobileSites: [Fixtures.siteTag]))
        _ = request(1, reader: reader)
        var other = reader
        other.id = ReaderID(7)
        let actions = controller.handle(.request(RequestID(2), ReaderID(7), .access, reader: other), at: .zero)
        #expect(actions.first == .startExchange(ReaderID(7), .manual(RequestID(2)), .access))
    }

    @Test mutating func timeoutAbortsAndAnswersOnce() {
        _ = request(1, reader: reader)
        let fired = controller.handle(.timerFired(.manual(RequestID(1))), at: .seconds(15))
        #expect(
            fired == [.abortExchange(Fixtures.readerID), .failed(Fixtures.readerID, .manual(RequestID(1)), .timeout)])
        // The slot is held until the aborted exchange really ends...
        #expect(request(2, reader: reader) == [.refuse(RequestID(2), .readerBusy)])
        // ...and its late end is not reported a second time.
        #expect(controller.handle(.exchangeEnded(Fixtures.readerID, granted), at: .seconds(16)) == [])
        #expect(request(3, reader: reader).first == .startExchange(Fixtures.readerID, .manual(RequestID(3)), .access))
    }

    @Test mutating func exchangeEndForAnUnknownReaderIsIgnored() {
        #expect(controller.handle(.exchangeEnded(ReaderID(99), granted), at: .zero) == [])
    }
}
