/// The recovery ladder for a radio that has stopped hearing (issue #38). Linux controllers
/// are known to stop reporting advertisements after days of scanning while BlueZ still says
/// "discovering"; Home Assistant's `bluetooth-auto-recovery` walks a ladder for it. Here:
///
/// 1. **Silence** is suspicious after `silenceAfterReaders` when a reader was heard on the
///    adapter within `readersRecent` (readers advertise several times a second and do not
///    move), else after `silenceAtAll` since discovery started (nothing at all: no reader, no
///    phone, no beacon).
/// 2. **Restart discovery** (`restartDiscovery`); if nothing is heard within `settle`,
/// 3. **power-cycle the adapter** (`powerCycle`: `Adapter1.Powered` off and on; the kernel
///    resets the controller when it powers it on); if nothing is heard within `settle` of its
///    end, or it does not end within `powerCycleLimit`,
/// 4. **stuck** (`reportStuck`), and the power cycle is tried again after a backoff.
///
/// Never while an exchange runs on the adapter (a rung waits for it to end), and never more
/// than one power cycle per `backoff`: each one doubles it, from `backoffFirst` to
/// `backoffMaximum`, and it starts over once the radio has heard for `backoffMaximum`
/// without one. The first advertisement heard during a recovery ends it (`reportRecovered`).
/// A value machine: the shell feeds it what happened and carries out what it returns.
public struct RadioRecovery: Sendable {
    public struct Limits: Hashable, Sendable {
        public var silenceAfterReaders: Duration
        public var readersRecent: Duration
        public var silenceAtAll: Duration
        public var settle: Duration
        public var powerCycleLimit: Duration
        public var backoffFirst: Duration
        public var backoffMaximum: Duration

        public init(
            silenceAfterReaders: Duration = .seconds(5), readersRecent: Duration = .seconds(120),
            silenceAtAll: Duration = .seconds(60), settle: Duration = .seconds(5),
            powerCycleLimit: Duration = .seconds(10), backoffFirst: Duration = .seconds(30),
            backoffMaximum: Duration = .seconds(600)
        ) {
            self.silenceAfterReaders = silenceAfterReaders
            self.readersRecent = readersRecent
            self.silenceAtAll = silenceAtAll
            self.settle = settle
            self.powerCycleLimit = powerCycleLimit
            self.backoffFirst = backoffFirst
            self.backoffMaximum = max(backoffFirst, backoffMaximum)
        }
    }

    public enum Rung: String, Hashable, Sendable, CaseIterable {
        case restartDiscovery
        case powerCycle
    }

    /// How a rung ended, as counted (`accessd_adapter_recoveries_total{rung,result}`).
    public enum Result: String, Hashable, Sendable, CaseIterable {
        /// An advertisement was heard within `settle`.
        case recovered
        /// Still nothing heard.
        case silent
        /// The rung itself failed (BlueZ refused the power change, or it did not end in time).
        case failed
    }

    public enum Action: Hashable, Sendable {
        case restartDiscovery
        case powerCycle
        /// Every rung tried and still silent: say the adapter is stuck (the power cycle is
        /// tried again at `retryIn`).
        case reportStuck(retryIn: Duration)
        /// Heard again after `rung`, `after` the silence began.
        case reportRecovered(Rung, after: Duration)
    }

    public enum State: Hashable, Sendable {
        /// Discovery does not run (scanning off, no adapter): nothing to watch.
        case idle
        case listening
        /// `rung` was taken at `at`; an advertisement within `settle` ends the recovery.
        case climbed(Rung, at: Timestamp)
        /// Powered off and on since `since`; `powerCycleEnded` says when and how it ended.
        case powerCycling(since: Timestamp)
        /// Silent after every rung; the power cycle again at `retryAt`.
        case stuck(retryAt: Timestamp)
    }

    public private(set) var state: State = .idle
    /// Rungs taken and how they ended.
    public private(set) var counts: [Rung: [Result: Int]] = [:]
    public let limits: Limits

    private var listeningSince: Timestamp?
    private var lastHeard: Timestamp?
    private var lastReaderHeard: Timestamp?
    private var silenceBegan: Timestamp?
    private var exchangeActive = false
    private var lastPowerCycle: Timestamp?
    private var backoff: Duration

    public init(limits: Limits = Limits()) {
        self.limits = limits
        backoff = limits.backoffFirst
    }

    /// Whether a recovery is under way or the adapter is stuck.
    public var isRecovering: Bool {
        switch state {
        case .idle, .listening: false
        default: true
        }
    }

    /// How long the adapter has heard nothing, while a recovery is under way.
    public func silence(at now: Timestamp) -> Duration? {
        silenceBegan.map { now - $0 }
    }

    public var isStuck: Bool {
        if case .stuck = state { return true }
        return false
    }

    /// Whether accessd should be hearing: scanning wanted, an adapter in use, powered and
    /// allowed (the discovery machine's conditions). Silence is measured from when it became
    /// so. A power cycle of ours turns it off for a moment: not a change of conditions.
    public mutating func conditions(canListen: Bool, at now: Timestamp) {
        switch (canListen, state) {
        case (false, .powerCycling):
            return
        case (false, _):
            state = .idle
            listeningSince = nil
            silenceBegan = nil
        case (true, .idle):
            state = .listening
            listeningSince = now
        case (true, _):
            break
        }
    }

    /// Scanning moved to another adapter: what was measured of the old one (silence, the
    /// rung reached, the backoff) is not the new one's. The counts stay: they are the kiosk's.
    public mutating func adapterChanged() {
        state = .idle
        listeningSince = nil
        lastHeard = nil
        lastReaderHeard = nil
        silenceBegan = nil
        lastPowerCycle = nil
        backoff = limits.backoffFirst
    }

    /// An exchange (or a held link) runs on the adapter, or none does.
    public mutating func exchangeActive(_ active: Bool) {
        exchangeActive = active
    }

    /// The hot path, for every advertisement heard on the adapter (`reader`: one of ours).
    public mutating func heard(at now: Timestamp, reader: Bool) -> Action? {
        lastHeard = now
        if reader { lastReaderHeard = now }
        if let last = lastPowerCycle, now - last >= limits.backoffMaximum {
            // Heard for long enough without a power cycle: the backoff starts over.
            lastPowerCycle = nil
            backoff = limits.backoffFirst
        }
        let rung: Rung
        switch state {
        case .idle, .listening: return nil
        case .climbed(let taken, _): rung = taken
        case .powerCycling, .stuck: rung = .powerCycle
        }
        count(rung, .recovered)
        let began = silenceBegan ?? now
        state = .listening
        silenceBegan = nil
        return .reportRecovered(rung, after: now - began)
    }

    /// The power cycle ended: the adapter is powered again (`ok`), or BlueZ refused.
    public mutating func powerCycleEnded(ok: Bool, at now: Timestamp) -> [Action] {
        guard case .powerCycling = state else { return [] }
        guard ok else {
            count(.powerCycle, .failed)
            return becomeStuck(at: now)
        }
        state = .climbed(.powerCycle, at: now)
        return []
    }

    /// Once a second.
    public mutating func tick(at now: Timestamp) -> [Action] {
        switch state {
        case .idle:
            return []
        case .listening:
            guard !exchangeActive, let since = listeningSince else { return [] }
            // Heard before this listening began does not count: a radio that came back.
            let quietSince = max(lastHeard ?? since, since)
            let readersAround = lastReaderHeard.map { now - $0 <= limits.readersRecent } ?? false
            let limit = readersAround ? limits.silenceAfterReaders : limits.silenceAtAll
            guard now - quietSince >= limit else { return [] }
            silenceBegan = quietSince
            state = .climbed(.restartDiscovery, at: now)
            return [.restartDiscovery]
        case .climbed(.restartDiscovery, let at):
            guard now - at >= limits.settle, !exchangeActive, mayPowerCycle(at: now) else { return [] }
            count(.restartDiscovery, .silent)
            return startPowerCycle(at: now)
        case .climbed(.powerCycle, let at):
            guard now - at >= limits.settle else { return [] }
            count(.powerCycle, .silent)
            return becomeStuck(at: now)
        case .powerCycling(let since):
            guard now - since >= limits.powerCycleLimit else { return [] }
            count(.powerCycle, .failed)
            return becomeStuck(at: now)
        case .stuck(let retryAt):
            guard now >= retryAt, !exchangeActive else { return [] }
            return startPowerCycle(at: now)
        }
    }

    private func mayPowerCycle(at now: Timestamp) -> Bool {
        lastPowerCycle.map { now - $0 >= backoff } ?? true
    }

    private mutating func startPowerCycle(at now: Timestamp) -> [Action] {
        if lastPowerCycle != nil { backoff = min(backoff * 2, limits.backoffMaximum) }
        lastPowerCycle = now
        state = .powerCycling(since: now)
        return [.powerCycle]
    }

    private mutating func becomeStuck(at now: Timestamp) -> [Action] {
        state = .stuck(retryAt: now + backoff)
        return [.reportStuck(retryIn: backoff)]
    }

    private mutating func count(_ rung: Rung, _ result: Result) {
        counts[rung, default: [:]][result, default: 0] += 1
    }
}
