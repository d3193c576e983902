/// Connecting early (`Configuration.connectEarly`): a reader heard within manual range that
/// would be chosen gets its link prepared before it is in auto range. One link at a time,
/// once per presence of the reader, counted against the adapter's connection limit, dropped
/// after `holdLimit`, when the reader is heard beyond manual range or no longer heard, when
/// an exchange with another reader needs its slot, or when automatic access or the
/// credential goes; a reader silent over its link for `presenceWait` is never connected to
/// early again.
extension AutoConnectMachine {
    /// The connect-early state as one value: no presence without a held link.
    struct EarlyLinks: Hashable, Sendable {
        struct Held: Hashable, Sendable {
            var candidate: Candidate
            /// The reader's presence advertisements were heard over the link.
            var presenceConfirmed = false
        }

        var held: Held?
        /// Readers connected to early since they were last unavailable: once per presence.
        var tried: Set<ReaderID> = []
        /// Readers that went silent over a held link.
        var silent: Set<ReaderID> = []
    }

    mutating func readerNearby(_ candidate: Candidate, slots: ExchangeSlots) -> [Action] {
        guard configuration.connectEarly, isAutomaticAccessEnabled, early.held == nil,
            candidate.isBleAutoConnectEnabled, credentials.canPresent(to: candidate.kind, site: candidate.siteTag),
            !early.tried.contains(candidate.id), !early.silent.contains(candidate.id), tracked[candidate.id] == nil,
            slots.canHoldLink, !slots.isBusy(candidate.id)
        else { return [] }
        early.held = EarlyLinks.Held(candidate: candidate)
        early.tried.insert(candidate.id)
        return [.prepareLink(candidate.id), .startTimer(.holdLimit(candidate.id), after: configuration.holdLimit)]
    }

    /// A held link's reader taken out of automatic access (the kiosk's scope changed): the
    /// link is no longer for an exchange to come.
    mutating func releaseIfNoLongerEligible(_ candidate: Candidate) -> [Action] {
        guard early.held?.candidate.id == candidate.id, !candidate.isBleAutoConnectEnabled else { return [] }
        return releasePrepared()
    }

    mutating func linkPrepared(_ id: ReaderID) -> [Action] {
        guard let held = early.held, held.candidate.id == id, !held.presenceConfirmed else { return [] }
        return [.startTimer(.presenceWait(id), after: configuration.presenceWait)]
    }

    mutating func presenceHeard(_ id: ReaderID) -> [Action] {
        guard let held = early.held, held.candidate.id == id, !held.presenceConfirmed else { return [] }
        early.held?.presenceConfirmed = true
        return [.cancelTimer(.presenceWait(id))]
    }

    mutating func releasePrepared() -> [Action] {
        guard let id = early.held?.candidate.id else { return [] }
        early.held = nil
        return [.cancelTimer(.holdLimit(id)), .cancelTimer(.presenceWait(id)), .releaseLink(id)]
    }

    mutating func holdLimitReached(_ id: ReaderID) -> [Action] {
        guard early.held?.candidate.id == id else { return [] }
        early.held = nil
        return [.cancelTimer(.presenceWait(id)), .releaseLink(id)]
    }

    /// Silent while connected: its distance cannot be followed over a held link.
    mutating func presenceNotHeard(_ id: ReaderID) -> [Action] {
        guard let held = early.held, held.candidate.id == id, !held.presenceConfirmed else { return [] }
        early.silent.insert(id)
        early.held = nil
        return [.cancelTimer(.holdLimit(id)), .releaseLink(id)]
    }

    /// The held reader was heard beyond manual range: the person walked off, and the link
    /// would only keep the reader from advertising to others.
    mutating func readerBeyondManualRange(_ id: ReaderID) -> [Action] {
        guard early.held?.candidate.id == id else { return [] }
        return releasePrepared()
    }

    /// A manual exchange (`access.request`, actions) starts with `id`: it takes over the held
    /// link if it is that reader's. Another reader's is dropped when the exchange needs its
    /// slot (`ExchangeSlots`: links never exceed the limit).
    mutating func manualExchangeStarts(_ id: ReaderID, slots: ExchangeSlots) -> [Action] {
        guard let held = early.held?.candidate.id else { return [] }
        if held == id {
            early.held = nil
            return [.cancelTimer(.holdLimit(id)), .cancelTimer(.presenceWait(id))]
        }
        return slots.linkCount + 1 > slots.limit ? releasePrepared() : []
    }

    /// An exchange with `id` starts: it takes over the held link if it is that reader's;
    /// another reader's would compete with the connection attempt, so it is dropped.
    mutating func exchangeTakesOver(_ id: ReaderID) -> [Action] {
        guard early.held?.candidate.id == id else { return releasePrepared() }
        early.held = nil
        return [.cancelTimer(.holdLimit(id)), .cancelTimer(.presenceWait(id))]
    }
}
