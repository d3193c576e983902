/// How a kiosk judges the readers it hears (docs/fleet.md, "Reader health"), in intervals of
/// `interval` (a minute by default: `[health] interval`).
///
/// A BLE advertisement does not say how often its sender advertises, and a reader's rate
/// depends on how it was set up, so each reader's usual rate is learned: the median of its
/// counts over the last `memory` intervals in which it was heard. A sagging battery, a reader
/// reset to another interval, a knocked antenna (fewer reports received) all move the rate
/// away from its usual; the learned rate follows a lasting change only after most of
/// `memory` (six hours by default), long enough for an alert to fire and a person to look.
public struct ReaderHealthPolicy: Hashable, Sendable {
    /// One measurement of the advertising rate; records are published at its end.
    public var interval: Duration
    /// Intervals heard that the usual rate is the median of.
    public var memory: Int
    /// Intervals heard before a usual rate is stated (and the rate judged).
    public var learning: Int
    /// The rate of the last two intervals below `tolerance` × usual: fewer advertisements;
    /// above usual ÷ `tolerance`: more.
    public var tolerance: Double
    /// Intervals listened without an advertisement before a reader is silent.
    public var silentAfter: Int
    /// Intervals the exchange counts cover.
    public var exchangeWindow: Int
    /// Failed exchanges in the window from which, when they are at least half of all the
    /// reader's exchanges there, its exchanges are failing.
    public var failingExchanges: Int
    /// A record that did not change is published again after this many intervals, so a
    /// retained record shows it is current.
    public var heartbeat: Int
    /// A reader silent for this many intervals is no longer followed (its last record, silent,
    /// stays where it was published).
    public var forgetAfter: Int

    public init(
        interval: Duration = .seconds(60), memory: Int = 360, learning: Int = 5, tolerance: Double = 0.6,
        silentAfter: Int = 2, exchangeWindow: Int = 60, failingExchanges: Int = 3, heartbeat: Int = 15,
        forgetAfter: Int = 1440
    ) {
        self.interval = interval
        self.memory = max(1, memory)
        self.learning = max(1, learning)
        self.tolerance = min(max(tolerance, 0.05), 0.95)
        self.silentAfter = max(1, silentAfter)
        self.exchangeWindow = max(1, exchangeWindow)
        self.failingExchanges = max(1, failingExchanges)
        self.heartbeat = max(1, heartbeat)
        self.forgetAfter = max(silentAfter + 1, forgetAfter)
    }

    public static let `default` = ReaderHealthPolicy()

    /// Readers followed at once: a kiosk hears a handful. A new reader beyond it takes the
    /// place of the one heard longest ago (a flood of made-up reader ids ages out first).
    public static let capacity = 256
    /// Path-loss samples a reader's median and spread are taken over.
    public static let pathLossSamples = 64
    /// Exchange outcomes kept per reader (the window's counts come from these).
    public static let exchangesKept = 256

    /// Advertisements per minute for `count` heard in one interval, to a tenth.
    func perMinute(_ count: Double) -> Double {
        let seconds = interval.secondsValue
        guard seconds > 0 else { return 0 }
        return (count * 60 / seconds * 10).rounded() / 10
    }
}

/// What is wrong with a reader, as its health record names it.
public enum ReaderHealthProblem: String, CaseIterable, Hashable, Sendable {
    /// Not heard for `silentAfter` intervals while the kiosk listened.
    case silent
    /// Advertising at under `tolerance` of its usual rate.
    case fewerAdvertisements
    /// Advertising at over its usual rate ÷ `tolerance`.
    case moreAdvertisements
    /// At least `failingExchanges` failed exchanges in the window, half or more of them all.
    case failingExchanges
}

/// How one exchange with a reader ended, as far as the reader's health goes.
public enum ReaderExchangeResult: Hashable, Sendable {
    case granted
    case denied
    /// Failed on the reader's side of the air, in this phase.
    case failed(Phase)

    public enum Phase: String, CaseIterable, Hashable, Sendable {
        /// Before or while connecting: the reader could not be reached.
        case connect
        /// Connected, but its access service did not show.
        case services
        /// During the protocol exchange.
        case exchange
    }

    /// The result an outcome counts as, or nil when it says nothing of the reader: a list of
    /// actions, a decision still pending, a busy reader serving someone else, or a failure on
    /// the kiosk's or the person's side (adapter busy or off, PIN declined or missing, an
    /// action not offered).
    public init?(_ outcome: ExchangeOutcome, phase: Phase) {
        switch outcome {
        case .decided(let result), .actionPerformed(_, let result):
            if result.decision.isGranted {
                self = .granted
            } else if result.decision.isDenied {
                self = .denied
            } else {
                return nil
            }
        case .actionsListed:
            return nil
        case .failed(.invalidatedCredential):
            self = .denied
        case .failed(let failure):
            switch failure {
            case .connectionAborted, .deviceNotFound, .timedOut, .remoteClose, .badReaderSignature, .protocolViolation:
                self = .failed(phase)
            default:
                return nil
            }
        }
    }
}
