/// Open the next door (`Input.openNext`, the SDK's `startOpeningNextDoor(expiry:)`): a person
/// asks for the door they are about to reach (a kiosk's touch screen, a push-button), so for
/// a few seconds the auto range is widened to the manual range. The first eligible reader
/// within manual range is opened, once; if several are, the nearest after the selection
/// window. Eligible as for automatic access (the reader offers it and the kiosk's scope leaves
/// it, a credential for its site is held), but whether automatic access is on does not
/// matter, nor the cooldown after a reader's last exchange: the person asked for this door now.
extension AutoConnectMachine {
    struct OpenNextWindow: Hashable, Sendable {
        var until: Timestamp
        /// Readers seen within manual range since the window opened, by id.
        var candidates: [ReaderID: Candidate] = [:]
        /// The selection timer runs.
        var selecting = false
    }

    /// Until when the open-next window is open, nil when it is not.
    public var openNextUntil: Timestamp? { openNext?.until }

    /// A second call while the window is open extends it to the new expiry.
    mutating func openNextDoor(expiry: Duration, now: Timestamp) -> [Action] {
        if openNext == nil {
            openNext = OpenNextWindow(until: now + expiry)
        } else {
            openNext?.until = now + expiry
        }
        return [.startTimer(.openNextExpiry, after: expiry)]
    }

    mutating func closeOpenNext(_ end: OpenNextEnd) -> [Action] {
        guard let window = openNext else { return [] }
        openNext = nil
        var actions: [Action] = []
        if end != .expired { actions.append(.cancelTimer(.openNextExpiry)) }
        if window.selecting { actions.append(.cancelTimer(.openNextSelection)) }
        return actions + [.openNextClosed(end)]
    }

    mutating func nextDoorObserved(
        _ candidate: Candidate, withinManualRange: Bool, now: Timestamp,
        slots: ExchangeSlots
    ) -> [Action] {
        guard var window = openNext else { return [] }
        guard withinManualRange, candidate.isBleAutoConnectEnabled,
            credentials.canPresent(to: candidate.kind, site: candidate.siteTag)
        else {
            window.candidates[candidate.id] = nil
            openNext = window
            return []
        }
        window.candidates[candidate.id] = candidate
        openNext = window
        if window.selecting { return [] }
        // Heard alone, no nearer reader can come within the window: at once.
        if configuration.selectionWindow <= .zero || !candidate.hasRivals {
            return chooseNextDoor(now: now, slots: slots)
        }
        openNext?.selecting = true
        return [.startTimer(.openNextSelection, after: configuration.selectionWindow)]
    }

    /// The nearest candidate gets the exchange, if a slot is free (else when one is).
    mutating func chooseNextDoor(now: Timestamp, slots: ExchangeSlots) -> [Action] {
        guard let window = openNext, !window.selecting, slots.freeCount > 0 else { return [] }
        let free = window.candidates.values.filter { candidate in
            if slots.isBusy(candidate.id) { return false }
            if case .exchanging = tracked[candidate.id]?.phase { return false }
            return true
        }
        guard let chosen = free.min(by: precedes) else { return [] }
        // Counted as this reader's approach: after it, the cooldown and the wait to leave range
        // apply as after any automatic exchange.
        var phaseRetries = 0
        if case .armed(let retries) = tracked[chosen.id]?.phase { phaseRetries = retries }
        let inRange = tracked[chosen.id]?.isInRange ?? false
        tracked[chosen.id] = Tracked(phase: .exchanging(retries: phaseRetries), candidate: chosen, isInRange: inRange)
        return closeOpenNext(.used(chosen.id)) + exchangeTakesOver(chosen.id) + [.startExchange(chosen.id)]
    }
}
