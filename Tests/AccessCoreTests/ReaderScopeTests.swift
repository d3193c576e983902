import Testing

@testable import AccessCore

/// The kiosk's reader scope (issue #13, item 1): allow and deny lists, per-reader rules, the
/// operator's layer over the file's, and what the registry and the machines make of them.
@Suite("Reader scope", .timeLimit(.minutes(5)))
struct ReaderScopeTests {
    let both: ReaderFlags = [.autoConnectEnabled, .manualConnectEnabled]
    let a = ReaderID(0x2A01), b = ReaderID(0x2A02), c = ReaderID(0x2A03)

    @Test func withoutRulesEveryReaderIsAsItOffers() {
        let scope = ReaderScope()
        #expect(scope.effective(for: a, offering: both) == .unrestricted)
        let autoOnly = scope.effective(for: a, offering: [.autoConnectEnabled])
        #expect(autoOnly.automatic && !autoOnly.manual && autoOnly.manualBecause == .notOffered)
        #expect(scope.pathLossOffset(for: a) == 0)
    }

    @Test func aDeniedReaderIsOpenedNeitherWay() {
        let scope = ReaderScope(configuration: [a: .init(listing: .denied)])
        let denied = scope.effective(for: a, offering: both)
        #expect(!denied.automatic && denied.automaticBecause == .denied)
        #expect(!denied.manual && denied.manualBecause == .denied)
        #expect(denied.ruleFrom == .configuration)
        #expect(scope.isDenied(a) && !scope.isDenied(b))
        #expect(scope.effective(for: b, offering: both) == .unrestricted)
    }

    /// An allow list limits automatic access to the readers on it; manual access stays.
    @Test func anAllowListLimitsAutomaticAccessOnly() {
        let scope = ReaderScope(configuration: [a: .init(listing: .allowed)])
        let allowed = scope.effective(for: a, offering: both)
        #expect(allowed.automatic && allowed.automaticBecause == .allowed)
        let other = scope.effective(for: b, offering: both)
        #expect(!other.automatic && other.automaticBecause == .notAllowed)
        #expect(other.manual && other.manualBecause == .offered)
    }

    /// A rule only takes away: `automatic = true` does not open a reader that offers no
    /// automatic access, nor one left off the allow list.
    @Test func aRuleNeverGrantsWhatTheReaderDoesNotOffer() {
        let scope = ReaderScope(configuration: [
            a: .init(automatic: true, manual: true), c: .init(listing: .allowed),
            b: .init(automatic: true),
        ])
        let manualOnly = scope.effective(for: a, offering: [.manualConnectEnabled])
        #expect(!manualOnly.automatic && manualOnly.automaticBecause == .notOffered)
        #expect(!scope.effective(for: b, offering: both).automatic)
        let off = ReaderScope(configuration: [a: .init(automatic: false, manual: false)]).effective(
            for: a, offering: both)
        #expect(!off.automatic && off.automaticBecause == .turnedOff && !off.manual && off.manualBecause == .turnedOff)
    }

    /// The operator's rule for a reader replaces the file's for that reader, whole; the
    /// others keep the file's; a reset brings the file's back.
    @Test func theOperatorsRuleReplacesTheFilesForItsReader() throws {
        var scope = ReaderScope(configuration: [a: .init(listing: .denied), b: .init(pathLossOffset: -3)])
        try scope.setOperatorRule(.init(pathLossOffset: 4), for: a)
        let a1 = scope.effective(for: a, offering: both)
        #expect(a1.automatic && a1.manual && a1.pathLossOffset == 4 && a1.ruleFrom == .operator)
        #expect(scope.pathLossOffset(for: b) == -3 && scope.rule(for: b)?.from == .configuration)
        // An empty rule from an operator still replaces the file's: "nothing special here".
        try scope.setOperatorRule(.init(), for: b)
        #expect(scope.pathLossOffset(for: b) == 0 && scope.rule(for: b)?.from == .operator)
        scope.resetOperatorRules(a)
        #expect(scope.isDenied(a))
        scope.resetOperatorRules()
        #expect(scope.pathLossOffset(for: b) == -3)
        #expect(scope.rules.map(\.id) == [a, b])
    }

    @Test func theAllowListFollowsTheRulesInForce() throws {
        var scope = ReaderScope(configuration: [a: .init(listing: .allowed)])
        #expect(scope.hasAllowList)
        try scope.setOperatorRule(.init(), for: a)
        #expect(!scope.hasAllowList, "the operator's rule took a off the list, and no other is on it")
        #expect(scope.effective(for: b, offering: both).automatic)
        scope.replaceConfiguration([c: .init(listing: .allowed)])
        #expect(scope.hasAllowList && !scope.effective(for: b, offering: both).automatic)
    }

    @Test func rulesAreBounded() {
        var scope = ReaderScope()
        #expect(throws: ReaderScopeError.offsetOutOfRange(limit: 30)) {
            try scope.setOperatorRule(.init(pathLossOffset: 31), for: a)
        }
        #expect(throws: ReaderScopeError.offsetOutOfRange(limit: 30)) {
            try scope.setOperatorRule(.init(pathLossOffset: .nan), for: a)
        }
        for id in 1...UInt32(ReaderScope.ruleLimit) {
            try? scope.setOperatorRule(.init(manual: false), for: ReaderID(id))
        }
        #expect(scope.operatorRules.count == ReaderScope.ruleLimit)
        #expect(throws: ReaderScopeError.tooManyRules(limit: ReaderScope.ruleLimit)) {
            try scope.setOperatorRule(.init(manual: false), for: ReaderID(0xFFFF))
        }
        // A reader that has a rule can still change it.
        #expect(throws: Never.self) { try scope.setOperatorRule(.init(listing: .denied), for: ReaderID(1)) }
    }

    // MARK: The registry

    /// A reader's offset is part of its path loss, and a new offset moves a tracked reader's
    /// smoothed path loss at once (a calibration shows without new samples).
    @Test func anOffsetMovesTheReadersPathLoss() throws {
        var registry = ReaderRegistry()
        var clock = VirtualClock()
        _ = registry.setScope(ReaderScope(configuration: [a: .init(pathLossOffset: -6)]))
        for _ in 0..<5 {
            _ = registry.observe(
                Fixtures.advertisement(), rssi: -79, address: Fixtures.address, name: nil, at: clock.now)
            _ = registry.observe(
                Fixtures.advertisement(id: 0x2A02), rssi: -79, address: Fixtures.address, name: nil, at: clock.now)
            clock.advance(.milliseconds(100))
        }
        #expect(registry.reader(a)?.measuredPathLoss == 14)
        #expect(registry.reader(b)?.measuredPathLoss == 20)
        let changed = registry.setScope(
            ReaderScope(configuration: [a: .init(pathLossOffset: 2), b: .init(listing: .denied)]))
        #expect(changed.map(\.id) == [a, b])
        #expect(registry.reader(a)?.measuredPathLoss == 22 && registry.reader(a)?.scope.pathLossOffset == 2)
        #expect(registry.reader(b)?.scope.automaticBecause == .denied)
        let next = registry.observe(
            Fixtures.advertisement(), rssi: -79, address: Fixtures.address, name: nil, at: clock.now)
        #expect(next.measuredPathLoss == 22, "the samples moved with the average")
        // Nothing changed: nothing to publish.
        #expect(registry.setScope(registry.scope).isEmpty)
    }

    // MARK: The machines

    /// Two readers at one distance, one denied: only the other is opened automatically.
    @Test func automaticAccessSkipsADeniedReader() {
        var controller = AccessController(
            automaticAccessEnabled: true,
            credentials: CredentialAvailability(mobileSites: [Fixtures.siteTag]))
        let scope = ReaderScope(configuration: [a: .init(listing: .denied)])
        var first = AutoConnectTests.reader(0x2A01)
        var second = AutoConnectTests.reader(0x2A02)
        first.scope = scope.effective(for: a, offering: first.flags)
        second.scope = scope.effective(for: b, offering: second.flags)
        var started: [ReaderID] = []
        for reader in [first, second] {
            for action in controller.handle(
                .readerObserved(reader, isInAutoConnectRange: true, othersHeard: false), at: .zero)
            {
                if case .startExchange(let id, _, _) = action { started.append(id) }
            }
        }
        for action in controller.handle(.timerFired(.automatic(.selection)), at: .zero + .milliseconds(200)) {
            if case .startExchange(let id, _, _) = action { started.append(id) }
        }
        #expect(started == [b])
    }

    /// A reader standing in auto range while denied is opened as soon as it is allowed again,
    /// not at its next approach.
    @Test func aReaderTakenBackIntoTheScopeInRangeIsOpened() {
        var controller = AccessController(
            automaticAccessEnabled: true,
            credentials: CredentialAvailability(mobileSites: [Fixtures.siteTag]))
        var reader = AutoConnectTests.reader(0x2A01)
        reader.scope = ReaderScope(configuration: [a: .init(listing: .denied)]).effective(
            for: a, offering: reader.flags)
        #expect(
            controller.handle(.readerObserved(reader, isInAutoConnectRange: true, othersHeard: false), at: .zero)
                .isEmpty)
        reader.scope = .unrestricted
        let actions = controller.handle(
            .readerObserved(reader, isInAutoConnectRange: true, othersHeard: false),
            at: .zero + .seconds(5))
        #expect(actions.contains { if case .startExchange(a, _, _) = $0 { true } else { false } }, "\(actions)")
    }

    @Test func manualAccessToADeniedOrTurnedOffReaderIsRefusedWithItsCause() {
        var controller = AccessController(credentials: CredentialAvailability(mobileSites: [Fixtures.siteTag]))
        var reader = AutoConnectTests.reader(0x2A01)
        reader.scope = ReaderScope(operatorRules: [a: .init(listing: .denied)]).effective(
            for: a, offering: reader.flags)
        #expect(
            controller.handle(.request(RequestID(1), a, .access, reader: reader), at: .zero)
                == [.refuse(RequestID(1), .readerDenied(.operator))])
        #expect(
            controller.handle(.request(RequestID(2), a, .enumerateActions, reader: reader), at: .zero)
                == [.refuse(RequestID(2), .readerDenied(.operator))])
        reader.scope = ReaderScope(configuration: [a: .init(manual: false)]).effective(for: a, offering: reader.flags)
        #expect(
            controller.handle(.request(RequestID(3), a, .access, reader: reader), at: .zero)
                == [.refuse(RequestID(3), .manualAccessTurnedOff(.configuration))])
        #expect(ManualRefusal.readerDenied(.operator).error == .forbidden)
        #expect(ManualRefusal.readerDenied(.operator).cause == "readerDenied")
    }

    /// A link held early for a reader that an operator then denies is dropped at its next
    /// advertisement, not kept until the hold limit.
    @Test func aHeldLinkIsReleasedWhenItsReaderLeavesTheScope() {
        var machine = AutoConnectMachine(
            configuration: .init(connectEarly: true), automaticAccessEnabled: true,
            credentials: CredentialAvailability(mobileSites: [Fixtures.siteTag]))
        var candidate = AutoConnectMachine.Candidate(AutoConnectTests.reader(0x2A01, pathLoss: 30))
        let slots = ExchangeSlots(limit: 2)
        #expect(machine.handle(.readerNearby(candidate), at: .zero, slots: slots).first == .prepareLink(a))
        candidate.isBleAutoConnectEnabled = false
        let actions = machine.handle(.readerNearby(candidate), at: .zero + .milliseconds(100), slots: slots)
        #expect(actions.contains(AutoConnectMachine.Action.releaseLink(a)))
        #expect(machine.preparedReader == nil)
    }
}
