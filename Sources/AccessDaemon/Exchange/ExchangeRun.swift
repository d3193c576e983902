import AccessCore
import BlueZ
import ControlSocket
import Crypto

/// What the access engine asks the exchange engine to do, in order.
enum ExchangeCommand: Sendable {
    case start(ExchangeOrder)
    /// The controller gave up on it (a manual request's timeout).
    case abort(ReaderID)
    /// Connect early (`[access] connect_early`) and hold the link for the exchange to come.
    case holdLink(ReaderAttributes, devicePath: String)
    case releaseLink(ReaderID)
    /// BlueZ says the device disconnected or vanished.
    case linkDropped(devicePath: String)
    /// A reload (SIGHUP): exchanges started from now on use these.
    case reconfigure(ExchangeSettings)
}

/// An exchange the controller decided on, with what the exchange engine needs of the reader.
struct ExchangeOrder: Sendable {
    var reader: ReaderAttributes
    var devicePath: String
    var origin: ExchangeOrigin
    var operation: ExchangeOperation
    /// When this approach's first advertisement put the reader in auto range (automatic only).
    var detected: ContinuousClock.Instant?
    /// What started an automatic exchange other than range (`openNext`), for its events.
    var trigger: String? = nil
    /// The credential a manual request asked to present; nil: the one for the reader's site.
    var credential: CredentialID? = nil
}

/// One exchange in progress: the protocol session, the link it runs over, and its phases.
struct ExchangeRun: Sendable {
    /// Tells this run from a later one with the same reader, so a late callback of a link
    /// that ended cannot touch it.
    var id: UInt64
    var session: CredentialSession
    var origin: ExchangeOrigin
    var credential: CredentialID
    var devicePath: String
    var link: Task<Void, Never>?
    /// Fragments to write, in order, by the run's writer task (set once the control point is known).
    var writes: AsyncStream<[UInt8]>.Continuation?
    var writer: Task<Void, Never>?
    var stepTimer: Task<Void, Never>?
    /// Tells the step timer armed last from one cancelled while it fired.
    var stepTimerID: UInt64 = 0
    /// The open second-factor prompt (`secondFactor.required`), if any: the only record of it.
    var secondFactorRequest: String?
    /// When that prompt opened, for `secondFactor.list`'s time left.
    var secondFactorOpenedAt: ContinuousClock.Instant?
    /// The name the reader advertises, for the prompt's text.
    var readerName: String?
    /// Over a held link's standing subscription: the task reading its notifications (the
    /// run's link task has ended by then).
    var standingReading: Task<Void, Never>?
    var phases: ExchangePhases
}

/// When each phase of an exchange was reached, for `access.completed`'s `timings`.
struct ExchangePhases: Sendable {
    var detected: ContinuousClock.Instant?
    var started = ContinuousClock.now
    var connected: ContinuousClock.Instant?
    var resolved: ContinuousClock.Instant?
    var mtu: Int?

    /// Milliseconds per phase: detection (first in-range advertisement → exchange start,
    /// automatic only), connect, service resolution, protocol exchange, and in all.
    func timings(endedAt end: ContinuousClock.Instant) -> ExchangeTimings {
        func ms(_ from: ContinuousClock.Instant?, _ to: ContinuousClock.Instant?) -> Double? {
            guard let from, let to else { return nil }
            let d = to - from
            return (Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15).rounded()
        }
        return ExchangeTimings(
            detectionMs: ms(detected, started), connectMs: ms(started, connected),
            resolveMs: ms(connected, resolved), exchangeMs: ms(resolved, end),
            totalMs: ms(detected ?? started, end), mtu: mtu)
    }
}

/// What the shell keeps of the links `LinkMachine` owns: the reader a link is held for (its
/// preparation needs the reader's site key), held links' standing subscriptions, and what
/// each Disconnect waits for.
struct LinkResources: Sendable {
    /// The reader of the held link, from `holdLink` until its preparation starts.
    var heldReader: ReaderAttributes?
    /// Standing subscriptions of held links (version 2 readers), until an exchange takes one
    /// over or the link goes.
    var standing: [LinkMachine.ID: StandingLink] = [:]
    /// What a link's Disconnect waits for: the last writes of the exchange that ran over it,
    /// and whether BlueZ will report the disconnection (the link was up and did not drop itself).
    var closing: [LinkMachine.ID: (writer: Task<Void, Never>?, reportWillCome: Bool)] = [:]
    /// Disconnects under way, for the stop to wait on.
    var disconnecting: [LinkMachine.ID: Task<Void, Never>] = [:]
}

/// A held link's subscription to a reader whose challenge stands (docs/reader-protocol.md §6,
/// "Standing challenges"): the exchange at the door takes it over whole.
struct StandingLink: Sendable {
    var challenge: StandingChallenge
    var controlPoint: GattCharacteristicState
    var writes: AsyncStream<[UInt8]>.Continuation
    var writer: Task<Void, Never>
    /// Reads the control point's notifications: to `challenge` while held, to the exchange after.
    var reading: Task<Void, Never>

    func stop() {
        reading.cancel()
        writes.finish()
    }
}

/// What the exchange engine needs of the configuration.
struct ExchangeSettings: Sendable {
    var stepTimeout: Duration
    var secondFactorTimeout: Duration
    var secondFactorPrompt: String
    var aperioEnabled: Bool
    /// Connect and resolve services within this.
    var connectTimeout: Duration { stepTimeout * 2 }

    init(_ configuration: AccessdConfiguration) {
        stepTimeout = configuration.stepTimeout
        secondFactorTimeout = configuration.secondFactorTimeout
        secondFactorPrompt = configuration.secondFactorPrompt
        aperioEnabled = configuration.features.contains("aperio")
    }
}
