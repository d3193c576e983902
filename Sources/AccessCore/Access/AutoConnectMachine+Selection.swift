/// Choosing among armed readers: which goes first, and starting exchanges while slots are free.
extension AutoConnectMachine {
    /// Which of two candidates goes first: the higher priority of the credential for its site
    /// (several sites' readers in range), then the nearer, then the lower id.
    func precedes(_ a: Candidate, _ b: Candidate) -> Bool {
        let priorityA = credentials.priority(of: a.siteTag)
        let priorityB = credentials.priority(of: b.siteTag)
        if priorityA != priorityB { return priorityA > priorityB }
        if a.measuredPathLoss != b.measuredPathLoss { return a.measuredPathLoss < b.measuredPathLoss }
        return a.id < b.id
    }

    /// Starts exchanges with the nearest eligible armed readers while slots are free.
    mutating func select(now: Timestamp, slots: ExchangeSlots) -> [Action] {
        guard isAutomaticAccessEnabled, !selectionPending else { return [] }
        var free = slots.freeCount
        var actions: [Action] = []
        while free > 0 {
            var best: Tracked?
            for entry in tracked.values {
                guard case .armed = entry.phase, entry.isInRange, entry.candidate.isBleAutoConnectEnabled,
                    credentials.canPresent(to: entry.candidate.kind, site: entry.candidate.siteTag),
                    !slots.isBusy(entry.candidate.id)
                else { continue }
                if let current = best {
                    if precedes(entry.candidate, current.candidate) { best = entry }
                } else {
                    best = entry
                }
            }
            guard var chosen = best, case .armed(let retries) = chosen.phase else { break }
            chosen.phase = .exchanging(retries: retries)
            tracked[chosen.candidate.id] = chosen
            // An open-next window is used by whichever door opens next, this one in auto range too.
            actions += closeOpenNext(.used(chosen.candidate.id))
            actions += exchangeTakesOver(chosen.candidate.id)
            actions.append(.startExchange(chosen.candidate.id))
            free -= 1
        }
        return actions
    }
}
