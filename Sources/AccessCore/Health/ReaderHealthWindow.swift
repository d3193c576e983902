/// What one kiosk keeps of one reader between intervals: advertisements counted in the
/// current interval, the counts of past intervals, the last path-loss samples and exchange
/// outcomes. Bounded: every collection is a ring of a fixed size (`ReaderHealthPolicy`).
struct ReaderHealthWindow: Sendable {
    var name: String?
    /// Advertisements heard in the current interval.
    var counting = 0
    /// Whether the reader had a link at some point of the current interval (a connected
    /// reader stops advertising).
    var linked = false
    /// The interval it was first heard in: it was heard for part of it only, so it measures
    /// no rate (a lab run learned 456 a minute against 540 heard when it counted).
    var firstInterval = true
    /// Counts of the last intervals in which the reader was heard (the usual rate's median).
    var heardCounts: [Int] = []
    var heardNext = 0
    /// Counts of the last two intervals listened whole (zero included): the rate judged.
    var recent: [Int] = []
    /// Listened intervals in a row without an advertisement.
    var silentIntervals = 0
    var pathLoss: [Double] = []
    var pathLossNext = 0
    /// (interval number, result), oldest first.
    var exchanges: [(interval: Int, result: ReaderExchangeResult)] = []
    var lastHeard: Timestamp
    var published: ReaderHealthRecord?
    var publishedInterval = 0

    init(heardAt now: Timestamp) {
        lastHeard = now
    }

    mutating func heard(pathLoss sample: Double, reports: Int, name: String?, at now: Timestamp) {
        counting += max(0, reports)
        lastHeard = now
        if let name { self.name = name }
        if pathLoss.count < ReaderHealthPolicy.pathLossSamples {
            pathLoss.append(sample)
        } else {
            pathLoss[pathLossNext] = sample
        }
        pathLossNext = (pathLossNext + 1) % ReaderHealthPolicy.pathLossSamples
    }

    mutating func exchanged(_ result: ReaderExchangeResult, interval: Int) {
        if exchanges.count >= ReaderHealthPolicy.exchangesKept { exchanges.removeFirst() }
        exchanges.append((interval, result))
    }

    /// Closes an interval; `listened` says whether the kiosk scanned all of it. Returns
    /// whether the interval measured the reader's rate (listened, and no link meanwhile).
    mutating func close(listened: Bool, policy: ReaderHealthPolicy) -> Bool {
        defer {
            counting = 0
            linked = false
            firstInterval = false
        }
        guard listened, !linked, !firstInterval else { return false }
        if counting > 0 {
            silentIntervals = 0
            if heardCounts.count < policy.memory {
                heardCounts.append(counting)
            } else {
                heardCounts[heardNext] = counting
            }
            heardNext = (heardNext + 1) % policy.memory
        } else {
            silentIntervals += 1
        }
        recent.append(counting)
        if recent.count > 2 { recent.removeFirst() }
        return true
    }

    /// The record at the end of interval `number`; `measured` as `close` returned.
    func record(
        _ reader: ReaderID, interval number: Int, measured: Bool, policy: ReaderHealthPolicy, now: Timestamp
    ) -> ReaderHealthRecord {
        let usual = heardCounts.count >= policy.learning ? Quantiles.median(heardCounts) : nil
        var problems: [ReaderHealthProblem] = []
        if silentIntervals >= policy.silentAfter {
            problems.append(.silent)
        } else if let usual, recent.count == 2 {
            let rate = Double(recent[0] + recent[1]) / 2
            if rate < usual * policy.tolerance { problems.append(.fewerAdvertisements) }
            if rate > usual / policy.tolerance { problems.append(.moreAdvertisements) }
        }
        var granted = 0
        var denied = 0
        var failed: [ReaderExchangeResult.Phase: Int] = [:]
        for exchange in exchanges where exchange.interval > number - policy.exchangeWindow {
            switch exchange.result {
            case .granted: granted += 1
            case .denied: denied += 1
            case .failed(let phase): failed[phase, default: 0] += 1
            }
        }
        let failures = failed.values.reduce(0, +)
        if failures >= policy.failingExchanges && failures * 2 >= failures + granted + denied {
            problems.append(.failingExchanges)
        }
        let sorted = pathLoss.sorted()
        return ReaderHealthRecord(
            reader: reader, name: name, problems: problems,
            advertisementsPerMinute: measured ? policy.perMinute(Double(recent.last ?? 0)) : nil,
            usualPerMinute: usual.map(policy.perMinute),
            pathLossMedian: sorted.isEmpty ? nil : round1(Quantiles.quantile(sorted, 0.5)),
            pathLossSpread: sorted.isEmpty
                ? nil : round1(Quantiles.quantile(sorted, 0.75) - Quantiles.quantile(sorted, 0.25)),
            pathLossSamples: sorted.count, granted: granted, denied: denied, failed: failed,
            exchangeWindow: policy.interval * policy.exchangeWindow, heardAgo: now - lastHeard,
            interval: policy.interval)
    }

    private func round1(_ value: Double) -> Double { (value * 10).rounded() / 10 }
}
