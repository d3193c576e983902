/// Why an access attempt did not produce a decision: the SDK's `ReaderConnectionError`
/// cases, plus `timeout` (a Linux addition: the reader stopped answering).
public enum ReaderConnectionError: String, Error, Sendable, CaseIterable, CustomStringConvertible {
    case forbidden
    case readerUnavailable
    case transactionInProgress
    case bluetoothDisabled
    case userCancelled
    case remoteClose
    case secondFactorRequired
    case invalidatedCredential
    case secondFactorLockedOut
    case timeout
    case unexpected

    /// The stable code on the socket: the case name.
    public var description: String { rawValue }
}
