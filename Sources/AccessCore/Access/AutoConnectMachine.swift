/// Decides when to connect to a reader on its own: once per approach.
///
/// A reader becomes a candidate ("armed") when it enters auto-connect range with
/// `isBleAutoConnectEnabled`. Candidates wait a short selection window so that, when two
/// readers come into range together, the nearer one is chosen; a reader heard alone has
/// no rival to wait for and goes at once. An exchange starts when
/// automatic access is on, a matching credential is held and a slot is free on the
/// adapter. When it ends the reader is "spent": blocked for `cooldown` and re-armed only
/// after it has left range. Transient failures retry with backoff while the reader stays
/// in range; permanent ones end the approach.
///
/// With `connectEarly`, a reader heard within manual range that would be chosen gets its
/// link prepared (connected, services resolved) before it is in auto range, so that the
/// exchange there is only the protocol's round trips. One prepared link at a time, once
/// per presence of the reader, dropped after `holdLimit`, when the reader is no longer
/// heard, or when automatic access or the credential goes. The reader must keep sending
/// presence advertisements while connected (docs/reader-protocol.md §2), or accessd could
/// not tell when it is in auto range: a reader not heard within `presenceWait` of its link
/// coming up has the link dropped and is never connected to early again.
public struct AutoConnectMachine: Sendable {
    public struct Configuration: Hashable, Sendable {
        public var cooldown: Duration
        public var selectionWindow: Duration
        public var retry: RetryPolicy
        public var connectEarly: Bool
        public var holdLimit: Duration
        /// How long after a prepared link is up the reader's first presence advertisement
        /// may take (readers advertise every 100 ms to 1 s).
        public var presenceWait: Duration

        public init(
            cooldown: Duration = .seconds(10), selectionWindow: Duration = .milliseconds(200),
            retry: RetryPolicy = RetryPolicy(), connectEarly: Bool = false, holdLimit: Duration = .seconds(20),
            presenceWait: Duration = .seconds(3)
        ) {
            self.cooldown = cooldown
            self.selectionWindow = selectionWindow
            self.retry = retry
            self.connectEarly = connectEarly
            self.holdLimit = holdLimit
            self.presenceWait = presenceWait
        }
    }

    /// A reader in auto-connect range, as the registry sees it.
    public struct Candidate: Hashable, Sendable {
        public var id: ReaderID
        public var kind: ReaderKind
        public var siteTag: SiteTag
        public var isBleAutoConnectEnabled: Bool
        public var measuredPathLoss: Double
        /// Whether any other reader is heard: only then can a nearer one come into range
        /// within the selection window.
        public var hasRivals: Bool

        public init(
            id: ReaderID, kind: ReaderKind, siteTag: SiteTag, isBleAutoConnectEnabled: Bool,
            measuredPathLoss: Double, hasRivals: Bool = true
        ) {
            self.id = id
            self.kind = kind
            self.siteTag = siteTag
            self.isBleAutoConnectEnabled = isBleAutoConnectEnabled
            self.measuredPathLoss = measuredPathLoss
            self.hasRivals = hasRivals
        }

        /// `isBleAutoConnectEnabled` is what the reader offers as the kiosk's scope leaves it.
        public init(_ attributes: ReaderAttributes, hasRivals: Bool = true) {
            self.init(
                id: attributes.id, kind: attributes.kind, siteTag: attributes.siteTag,
                isBleAutoConnectEnabled: attributes.isBleAutoConnectEnabled && attributes.scope.automatic,
                measuredPathLoss: attributes.measuredPathLoss, hasRivals: hasRivals)
        }
    }

    public enum Timer: Hashable, Sendable {
        case selection
        case retry(ReaderID)
        case cooldown(ReaderID)
        /// A prepared link not used by then is dropped.
        case holdLimit(ReaderID)
        /// The prepared link's reader has not been heard since the link came up.
        case presenceWait(ReaderID)
        /// The open-next window's end (`Input.openNext`).
        case openNextExpiry
        /// Readers seen within the open-next window wait this long so the nearest is chosen.
        case openNextSelection
    }

    public enum Input: Hashable, Sendable {
        /// Sent for every observation while the reader is in auto-connect range.
        case readerInRange(Candidate)
        /// The reader was heard outside auto-connect range.
        case readerLeftRange(ReaderID)
        /// The reader is heard within manual range, outside auto-connect range.
        case readerNearby(Candidate)
        /// The reader is heard beyond manual range.
        case readerBeyondManualRange(ReaderID)
        /// The reader is no longer heard.
        case readerUnavailable(ReaderID)
        /// The prepared link with this reader is up (connected, services resolved).
        case linkPrepared(ReaderID)
        /// A presence advertisement of this reader was heard.
        case presenceHeard(ReaderID)
        case automaticAccessChanged(Bool)
        case credentialsChanged(CredentialAvailability)
        /// An automatic exchange with this reader ended.
        case exchangeEnded(ReaderID, ExchangeOutcome)
        /// A slot was freed by an exchange of another origin.
        case slotFreed
        case timerFired(Timer)
        /// Open the next door (the SDK's `startOpeningNextDoor(expiry:)`): for `expiry`, the
        /// next eligible reader within manual range is opened as if it were in auto range, once.
        case openNext(expiry: Duration)
        case cancelOpenNext
        /// While the window is open: a reader heard, and whether it is within manual range.
        case openNextObserved(Candidate, withinManualRange: Bool)
    }

    /// How an open-next window ended.
    public enum OpenNextEnd: Hashable, Sendable {
        /// This reader's exchange starts (the action after this one).
        case used(ReaderID)
        case expired
        case cancelled
    }

    public enum Action: Hashable, Sendable {
        case startExchange(ReaderID)
        case startTimer(Timer, after: Duration)
        case cancelTimer(Timer)
        /// Connect and resolve services, and hold the link for an exchange to come.
        case prepareLink(ReaderID)
        /// Drop a prepared link that no exchange took.
        case releaseLink(ReaderID)
        /// The open-next window closed.
        case openNextClosed(OpenNextEnd)
    }

    enum Phase: Hashable, Sendable {
        /// In range, waiting for selection; `retries` made so far in this approach.
        case armed(retries: Int)
        case exchanging(retries: Int)
        case waitingToRetry(retries: Int)
        /// After an exchange: blocked until `until`, and until it has left range.
        case spent(until: Timestamp, hasLeftRange: Bool)
    }

    struct Tracked: Hashable, Sendable {
        var phase: Phase
        var candidate: Candidate
        var isInRange: Bool
    }

    public var configuration: Configuration
    public private(set) var isAutomaticAccessEnabled: Bool
    public private(set) var credentials: CredentialAvailability
    var tracked: [ReaderID: Tracked] = [:]
    var selectionPending = false
    /// Connecting early: the link held, and whom not to connect to early (again).
    var early = EarlyLinks()
    /// Open the next door: the window, while it is open.
    var openNext: OpenNextWindow?

    public init(
        configuration: Configuration = Configuration(), automaticAccessEnabled: Bool = false,
        credentials: CredentialAvailability = .none
    ) {
        self.configuration = configuration
        self.isAutomaticAccessEnabled = automaticAccessEnabled
        self.credentials = credentials
    }

    /// The reader whose link is prepared for an exchange to come, for diagnostics.
    public var preparedReader: ReaderID? { early.held?.candidate.id }

    /// Readers that went silent over a prepared link: never connected to early again.
    public var withoutPresence: Set<ReaderID> { early.silent }

    public mutating func handle(_ input: Input, at now: Timestamp, slots: ExchangeSlots) -> [Action] {
        switch input {
        case .readerInRange(let candidate):
            return releaseIfNoLongerEligible(candidate) + readerInRange(candidate, now: now, slots: slots)
        case .readerLeftRange(let id):
            return readerLeftRange(id, now: now)
        case .readerNearby(let candidate):
            return releaseIfNoLongerEligible(candidate) + readerNearby(candidate, slots: slots)
        case .readerBeyondManualRange(let id):
            return readerBeyondManualRange(id)
        case .linkPrepared(let id):
            return linkPrepared(id)
        case .presenceHeard(let id):
            return presenceHeard(id)
        case .readerUnavailable(let id):
            early.tried.remove(id)
            openNext?.candidates[id] = nil
            let release = early.held?.candidate.id == id ? releasePrepared() : []
            return release + readerLeftRange(id, now: now)
        case .automaticAccessChanged(let enabled):
            isAutomaticAccessEnabled = enabled
            return enabled ? select(now: now, slots: slots) : releasePrepared()
        case .credentialsChanged(let availability):
            credentials = availability
            let stale =
                early.held.map { !credentials.canPresent(to: $0.candidate.kind, site: $0.candidate.siteTag) } ?? false
            return (stale ? releasePrepared() : []) + select(now: now, slots: slots)
        case .exchangeEnded(let id, let outcome):
            return exchangeEnded(id, outcome: outcome, now: now, slots: slots)
        case .slotFreed:
            return select(now: now, slots: slots) + chooseNextDoor(now: now, slots: slots)
        case .timerFired(let timer):
            return timerFired(timer, now: now, slots: slots)
        case .openNext(let expiry):
            return openNextDoor(expiry: expiry, now: now)
        case .cancelOpenNext:
            return closeOpenNext(.cancelled)
        case .openNextObserved(let candidate, let within):
            return nextDoorObserved(candidate, withinManualRange: within, now: now, slots: slots)
        }
    }

    mutating func readerInRange(_ candidate: Candidate, now: Timestamp, slots: ExchangeSlots) -> [Action] {
        guard var entry = tracked[candidate.id] else {
            tracked[candidate.id] = Tracked(phase: .armed(retries: 0), candidate: candidate, isInRange: true)
            return scheduleSelection(for: candidate, now: now, slots: slots)
        }
        let wasInRange = entry.isInRange
        // Taken back into automatic access while it stands in range (the kiosk's scope):
        // armed all along, it is chosen now rather than at its next approach.
        let becameEligible = candidate.isBleAutoConnectEnabled && !entry.candidate.isBleAutoConnectEnabled
        entry.candidate = candidate
        entry.isInRange = true
        if becameEligible, case .armed = entry.phase {
            tracked[candidate.id] = entry
            return scheduleSelection(for: candidate, now: now, slots: slots)
        }
        if case .spent(let until, let hasLeftRange) = entry.phase, !wasInRange, hasLeftRange, now >= until {
            entry.phase = .armed(retries: 0)
            tracked[candidate.id] = entry
            return scheduleSelection(for: candidate, now: now, slots: slots)
        }
        tracked[candidate.id] = entry
        return []
    }

    mutating func readerLeftRange(_ id: ReaderID, now: Timestamp) -> [Action] {
        guard var entry = tracked[id] else { return [] }
        entry.isInRange = false
        switch entry.phase {
        case .armed:
            tracked[id] = nil
            return []
        case .exchanging:
            tracked[id] = entry
            return []
        case .waitingToRetry:
            // The approach is over: no retries for a reader that walked away.
            tracked[id] = nil
            return [.cancelTimer(.retry(id))]
        case .spent(let until, _):
            if now >= until {
                tracked[id] = nil
                return [.cancelTimer(.cooldown(id))]
            }
            entry.phase = .spent(until: until, hasLeftRange: true)
            tracked[id] = entry
            return []
        }
    }

    mutating func exchangeEnded(
        _ id: ReaderID, outcome: ExchangeOutcome, now: Timestamp,
        slots: ExchangeSlots
    ) -> [Action] {
        guard var entry = tracked[id], case .exchanging(let retries) = entry.phase else {
            return select(now: now, slots: slots) + chooseNextDoor(now: now, slots: slots)
        }
        var actions: [Action] = []
        if case .failed(let failure) = outcome, failure.isTransient, entry.isInRange,
            retries < configuration.retry.maximumRetries
        {
            entry.phase = .waitingToRetry(retries: retries + 1)
            actions.append(
                .startTimer(.retry(id), after: configuration.retry.delay(after: failure, retry: retries + 1)))
        } else {
            entry.phase = .spent(until: now + configuration.cooldown, hasLeftRange: !entry.isInRange)
            actions.append(.startTimer(.cooldown(id), after: configuration.cooldown))
        }
        tracked[id] = entry
        return actions + select(now: now, slots: slots) + chooseNextDoor(now: now, slots: slots)
    }

    mutating func timerFired(_ timer: Timer, now: Timestamp, slots: ExchangeSlots) -> [Action] {
        switch timer {
        case .selection:
            selectionPending = false
            return select(now: now, slots: slots)
        case .retry(let id):
            guard var entry = tracked[id], case .waitingToRetry(let retries) = entry.phase else { return [] }
            entry.phase = .armed(retries: retries)
            tracked[id] = entry
            return select(now: now, slots: slots)
        case .holdLimit(let id):
            return holdLimitReached(id)
        case .presenceWait(let id):
            return presenceNotHeard(id)
        case .openNextExpiry:
            return closeOpenNext(.expired)
        case .openNextSelection:
            openNext?.selecting = false
            return chooseNextDoor(now: now, slots: slots)
        case .cooldown(let id):
            guard var entry = tracked[id], case .spent(_, let hasLeftRange) = entry.phase else { return [] }
            guard hasLeftRange else { return [] }  // still in range since the exchange: wait for it to leave
            if entry.isInRange {
                entry.phase = .armed(retries: 0)
                tracked[id] = entry
                return scheduleSelection(for: entry.candidate, now: now, slots: slots)
            }
            tracked[id] = nil
            return []
        }
    }

    mutating func scheduleSelection(for candidate: Candidate, now: Timestamp, slots: ExchangeSlots) -> [Action] {
        // A reader heard alone cannot lose to a nearer one: waiting would only delay the door.
        if configuration.selectionWindow <= .zero || (!candidate.hasRivals && !selectionPending) {
            return select(now: now, slots: slots)
        }
        if selectionPending { return [] }
        selectionPending = true
        return [.startTimer(.selection, after: configuration.selectionWindow)]
    }
}
