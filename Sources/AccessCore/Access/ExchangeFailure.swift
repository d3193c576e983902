/// How an exchange with a reader ended without a decision, classified for retry policy.
///
/// The transient classes follow bleak-retry-connector's experience with BlueZ: each has
/// its own first delay, and delays double per attempt up to a cap.
public enum ExchangeFailure: Hashable, Sendable {
    /// `le-connection-abort-by-local` and friends: the controller gave up; retry quickly.
    case connectionAborted
    /// The device object vanished or was never found.
    case deviceNotFound
    /// BlueZ said NotReady / InProgress / Busy: another operation holds the adapter.
    case adapterBusy
    /// No answer in time (connect, service resolution or a protocol step).
    case timedOut
    /// The reader dropped the link mid-exchange.
    case remoteClose
    /// The reader's challenge did not verify against the site key: a spoofed reader.
    case badReaderSignature
    /// The reader refused the credential (revoked or unknown to it).
    case invalidatedCredential
    /// The reader asks for a second factor that cannot be given automatically.
    case secondFactorRequired
    case secondFactorLockedOut
    /// The person declined the second-factor prompt (`secondFactor.cancel`): the SDK's
    /// `userCancelled`.
    case userCancelled
    /// The reader answered `unsupportedOperation`: it offers no such action, or no actions.
    case operationNotOffered
    /// The reader answered `busy`: it is serving another holder.
    case readerBusy
    /// A protocol violation by the reader (malformed frame, replay).
    case protocolViolation
    /// The adapter is powered off or blocked.
    case bluetoothDisabled

    /// Transient failures may be retried while the reader stays in range.
    public var isTransient: Bool {
        switch self {
        case .connectionAborted, .deviceNotFound, .adapterBusy, .readerBusy, .timedOut, .remoteClose: true
        default: false
        }
    }

    /// First retry delay of a transient class.
    public var baseDelay: Duration {
        switch self {
        case .connectionAborted: .milliseconds(250)
        case .deviceNotFound: .milliseconds(500)
        case .adapterBusy, .readerBusy: .seconds(1)
        case .timedOut: .seconds(1)
        case .remoteClose: .milliseconds(500)
        default: .zero
        }
    }

    /// The SDK error a client sees when the exchange ends with this failure.
    public var connectionError: ReaderConnectionError {
        switch self {
        case .connectionAborted, .deviceNotFound: .readerUnavailable
        case .adapterBusy: .transactionInProgress
        case .timedOut: .timeout
        case .remoteClose: .remoteClose
        case .badReaderSignature: .forbidden
        case .invalidatedCredential: .invalidatedCredential
        case .secondFactorRequired: .secondFactorRequired
        case .secondFactorLockedOut: .secondFactorLockedOut
        case .userCancelled: .userCancelled
        case .operationNotOffered: .forbidden
        case .readerBusy: .transactionInProgress
        case .protocolViolation: .unexpected
        case .bluetoothDisabled: .bluetoothDisabled
        }
    }
}

/// Retry policy for transient failures.
public struct RetryPolicy: Hashable, Sendable {
    /// Retries per approach (the first attempt not counted).
    public var maximumRetries: Int
    /// No delay grows beyond this.
    public var maximumDelay: Duration

    public init(maximumRetries: Int = 4, maximumDelay: Duration = .seconds(8)) {
        self.maximumRetries = maximumRetries
        self.maximumDelay = maximumDelay
    }

    /// Delay before retry number `retry` (1-based) after `failure`.
    public func delay(after failure: ExchangeFailure, retry: Int) -> Duration {
        var delay = failure.baseDelay
        for _ in 1..<max(retry, 1) {
            delay = delay * 2
            if delay >= maximumDelay { return maximumDelay }
        }
        return min(delay, maximumDelay)
    }
}

/// How an exchange ended.
public enum ExchangeOutcome: Hashable, Sendable {
    case decided(AccessResult)
    /// Actions were enumerated or one was performed.
    case actionsListed([ReaderAction])
    case actionPerformed(actionID: Int8, result: AccessResult)
    case failed(ExchangeFailure)
}
