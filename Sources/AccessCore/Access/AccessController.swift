/// The one value the daemon drives for access: it owns the exchange slots of the adapter
/// and routes inputs to the auto-connect and manual-access machines, so that the two
/// never start more exchanges than the adapter allows, nor two with one reader.
public struct AccessController: Sendable {
    public enum Timer: Hashable, Sendable {
        case automatic(AutoConnectMachine.Timer)
        case manual(RequestID)
    }

    public enum Input: Hashable, Sendable {
        /// The registry's view after an observation (see `ReaderRegistry.Observation`), and
        /// whether any other reader is heard (a rival the selection window waits for).
        case readerObserved(ReaderAttributes, isInAutoConnectRange: Bool, othersHeard: Bool = true)
        case readerUnavailable(ReaderID)
        /// A link asked for with `prepareLink` is up.
        case linkPrepared(ReaderID)
        /// A presence advertisement (docs/reader-protocol.md §2) of this reader was heard.
        case presenceHeard(ReaderID)
        case automaticAccessChanged(Bool)
        case credentialsChanged(CredentialAvailability)
        case request(RequestID, ReaderID, ExchangeOperation, reader: ReaderAttributes?)
        /// Open the next door within manual range, for `expiry` (`AutoConnectMachine.Input.openNext`).
        case openNext(expiry: Duration)
        case cancelOpenNext
        /// The shell reports the end of every exchange it started, whatever its origin.
        case exchangeEnded(ReaderID, ExchangeOutcome)
        case timerFired(Timer)
    }

    public enum Action: Hashable, Sendable {
        /// Connect and run the exchange. `access.started` is emitted by the shell here.
        case startExchange(ReaderID, ExchangeOrigin, ExchangeOperation)
        case abortExchange(ReaderID)
        case startTimer(Timer, after: Duration)
        case cancelTimer(Timer)
        /// A manual request refused before any exchange.
        case refuse(RequestID, ManualRefusal)
        /// An exchange finished: `access.completed` for automatic ones, and the answer to
        /// the request for manual ones.
        case completed(ReaderID, ExchangeOrigin, ExchangeOutcome)
        /// A manual request failed after it started (its timeout).
        case failed(ReaderID, ExchangeOrigin, ReaderConnectionError)
        /// Connect early: connect and resolve services, and hold the link for the exchange.
        case prepareLink(ReaderID)
        /// Drop a prepared link no exchange took (unless an exchange runs over it).
        case releaseLink(ReaderID)
        /// The open-next window closed: used by the exchange that follows, expired or cancelled.
        case openNextClosed(AutoConnectMachine.OpenNextEnd)
    }

    /// The adapter's exchanges; `slots` adds the held link, which the auto-connect machine owns.
    private var exchanges: ExchangeSlots
    public var slots: ExchangeSlots {
        var slots = exchanges
        slots.held = automatic.preparedReader
        return slots
    }
    public private(set) var automatic: AutoConnectMachine
    public private(set) var manual: ManualAccessMachine
    public private(set) var credentials: CredentialAvailability

    public init(
        slotLimit: Int = 1,
        automatic: AutoConnectMachine.Configuration = .init(),
        manual: ManualAccessMachine.Configuration = .init(),
        automaticAccessEnabled: Bool = false,
        credentials: CredentialAvailability = .none
    ) {
        self.exchanges = ExchangeSlots(limit: slotLimit)
        self.automatic = AutoConnectMachine(
            configuration: automatic, automaticAccessEnabled: automaticAccessEnabled,
            credentials: credentials)
        self.manual = ManualAccessMachine(configuration: manual)
        self.credentials = credentials
    }

    /// A configuration reload: timings and retries for what is decided from now on. Exchanges
    /// under way and timers already started keep the values they began with; the slot limit
    /// and connecting early are fixed for the controller's life.
    public mutating func reconfigure(
        automatic: AutoConnectMachine.Configuration, manual: ManualAccessMachine.Configuration
    ) {
        var automatic = automatic
        automatic.connectEarly = self.automatic.configuration.connectEarly
        self.automatic.configuration = automatic
        self.manual.configuration = manual
    }

    public mutating func handle(_ input: Input, at now: Timestamp) -> [Action] {
        switch input {
        case .readerObserved(let attributes, let inRange, let othersHeard):
            let candidate = AutoConnectMachine.Candidate(attributes, hasRivals: othersHeard)
            let withinManual = attributes.measuredPathLoss <= Double(attributes.manualConnectPathLoss)
            var actions: [Action] = []
            if inRange {
                actions = runAutomatic(.readerInRange(candidate), now: now)
            } else {
                actions = runAutomatic(.readerLeftRange(attributes.id), now: now)
                actions += runAutomatic(
                    withinManual ? .readerNearby(candidate) : .readerBeyondManualRange(attributes.id),
                    now: now)
            }
            if automatic.openNextUntil != nil {
                actions += runAutomatic(
                    .openNextObserved(candidate, withinManualRange: withinManual || inRange), now: now)
            }
            return actions
        case .readerUnavailable(let id):
            return runAutomatic(.readerUnavailable(id), now: now)
        case .linkPrepared(let id):
            return runAutomatic(.linkPrepared(id), now: now)
        case .presenceHeard(let id):
            return runAutomatic(.presenceHeard(id), now: now)
        case .automaticAccessChanged(let enabled):
            return runAutomatic(.automaticAccessChanged(enabled), now: now)
        case .credentialsChanged(let availability):
            credentials = availability
            return runAutomatic(.credentialsChanged(availability), now: now)
        case .request(let request, let reader, let operation, let attributes):
            return runManual(.request(request, reader, operation, reader: attributes), now: now)
        case .openNext(let expiry):
            return runAutomatic(.openNext(expiry: expiry), now: now)
        case .cancelOpenNext:
            return runAutomatic(.cancelOpenNext, now: now)
        case .exchangeEnded(let reader, let outcome):
            guard let origin = exchanges.end(reader) else { return [] }
            switch origin {
            case .automatic:
                return [.completed(reader, .automatic, outcome)]
                    + runAutomatic(.exchangeEnded(reader, outcome), now: now)
            case .manual(let request):
                return runManual(.exchangeEnded(request, outcome), now: now)
                    + runAutomatic(.slotFreed, now: now)
            }
        case .timerFired(.automatic(let timer)):
            return runAutomatic(.timerFired(timer), now: now)
        case .timerFired(.manual(let request)):
            return runManual(.timerFired(request), now: now)
        }
    }

    private mutating func runAutomatic(_ input: AutoConnectMachine.Input, now: Timestamp) -> [Action] {
        mapAutomatic(automatic.handle(input, at: now, slots: slots))
    }

    /// The automatic machine's actions as the controller's, keeping the slots' account of
    /// exchanges (the held link is the machine's own: `slots`).
    private mutating func mapAutomatic(_ actions: [AutoConnectMachine.Action]) -> [Action] {
        actions.map { action in
            switch action {
            case .startExchange(let reader):
                exchanges.begin(reader, origin: .automatic)
                return .startExchange(reader, .automatic, .access)
            case .startTimer(let timer, let delay):
                return .startTimer(.automatic(timer), after: delay)
            case .cancelTimer(let timer):
                return .cancelTimer(.automatic(timer))
            case .prepareLink(let reader):
                return .prepareLink(reader)
            case .releaseLink(let reader):
                return .releaseLink(reader)
            case .openNextClosed(let end):
                return .openNextClosed(end)
            }
        }
    }

    private mutating func runManual(_ input: ManualAccessMachine.Input, now: Timestamp) -> [Action] {
        manual.handle(input, slots: slots, credentials: credentials).flatMap { action -> [Action] in
            switch action {
            case .startExchange(let reader, let request, let operation):
                // The held link is this exchange's if it is the reader's, else it gives way
                // when the exchange needs its slot: dropped before the exchange connects.
                let handOver = mapAutomatic(automatic.manualExchangeStarts(reader, slots: slots))
                exchanges.begin(reader, origin: .manual(request))
                return handOver + [.startExchange(reader, .manual(request), operation)]
            case .abortExchange(let reader, _):
                // The slot stays taken until the shell reports the aborted exchange ended.
                return [.abortExchange(reader)]
            case .startTimer(let request, let delay):
                return [.startTimer(.manual(request), after: delay)]
            case .cancelTimer(let request):
                return [.cancelTimer(.manual(request))]
            case .refuse(let request, let error):
                return [.refuse(request, error)]
            case .complete(let request, let reader, let outcome):
                return [.completed(reader, .manual(request), outcome)]
            case .fail(let request, let reader, let error):
                return [.failed(reader, .manual(request), error)]
            }
        }
    }
}
