/// Keeps BlueZ discovery running on the chosen adapter while scanning is wanted and
/// possible, and stopped when it is not. A StartDiscovery or StopDiscovery call in flight is
/// a state: nothing else is asked of BlueZ until it ends, and a change that arrives meanwhile
/// is acted on as soon as it ends (not at the next tick).
///
/// `restart` stops and starts our discovery again: the first rung of the radio's recovery
/// ladder (`RadioRecovery`), which decides when. A start that failed is tried again at the
/// next tick.
public struct DiscoveryMachine: Sendable {
    public enum Input: Hashable, Sendable {
        /// The operator's setting, and whether the SDK state allows scanning (service,
        /// adapter powered, permission).
        case conditionsChanged(scanningEnabled: Bool, canScan: Bool)
        /// The adapter in use (nil: none), and whether BlueZ says it is discovering.
        case adapterChanged(path: String?, discovering: Bool)
        case startFinished(StartResult)
        case stopFinished
        /// Stop our discovery and start it again (the recovery ladder's first rung).
        case restart
        /// Once a second: a retry of a failed start.
        case tick
    }

    public enum StartResult: Hashable, Sendable {
        case started
        /// Another client's discovery runs on the adapter: ours is merged into it.
        case alreadyInProgress
        case failed
    }

    public enum Action: Hashable, Sendable {
        /// Set the discovery filter and call StartDiscovery.
        case start(adapter: String)
        case stop(adapter: String)
    }

    public enum State: Hashable, Sendable {
        case noAdapter
        /// No discovery session of ours on the adapter.
        case idle(adapter: String)
        case starting(adapter: String)
        /// Our session runs.
        case running(adapter: String)
        /// `restart`: start again once stopped.
        case stopping(adapter: String, restart: Bool)
    }

    public private(set) var state: State = .noAdapter
    private var scanningEnabled = false
    private var canScan = false

    public init() {}

    /// Whether discovery of ours runs or is being started.
    public var isActive: Bool {
        switch state {
        case .starting, .running: true
        default: false
        }
    }

    public mutating func handle(_ input: Input, at now: Timestamp) -> [Action] {
        switch input {
        case .conditionsChanged(let enabled, let possible):
            scanningEnabled = enabled
            canScan = possible
        case .adapterChanged(let path, let discovering):
            guard let path else {
                state = .noAdapter
                return []
            }
            switch state {
            case .noAdapter:
                state = .idle(adapter: path)
            case .idle(let adapter), .starting(let adapter), .stopping(let adapter, _):
                // Another adapter: a call in flight on the old one no longer matters.
                if adapter != path { state = .idle(adapter: path) }
            case .running(let adapter):
                // BlueZ ended our session (power cycle, controller reset): start it again.
                if adapter != path || !discovering { state = .idle(adapter: path) }
            }
        case .startFinished(let result):
            guard case .starting(let adapter) = state else { return [] }
            state = result == .failed ? .idle(adapter: adapter) : .running(adapter: adapter)
            if result == .failed { return [] }  // tried again at the next tick, not in a loop
        case .stopFinished:
            guard case .stopping(let adapter, let restart) = state else { return [] }
            state = .idle(adapter: adapter)
            if restart, scanningEnabled, canScan {
                state = .starting(adapter: adapter)
                return [.start(adapter: adapter)]
            }
        case .restart:
            if case .running(let adapter) = state {
                state = .stopping(adapter: adapter, restart: true)
                return [.stop(adapter: adapter)]
            }
        case .tick:
            break
        }
        return reconcile()
    }

    private mutating func reconcile() -> [Action] {
        switch state {
        case .idle(let adapter) where scanningEnabled && canScan:
            state = .starting(adapter: adapter)
            return [.start(adapter: adapter)]
        case .running(let adapter) where !scanningEnabled:
            state = .stopping(adapter: adapter, restart: false)
            return [.stop(adapter: adapter)]
        default:
            return []
        }
    }
}
