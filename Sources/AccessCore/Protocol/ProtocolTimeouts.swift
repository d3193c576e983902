/// How long each side waits for the other (docs/reader-protocol.md §6).
public struct ProtocolTimeouts: Hashable, Sendable {
    /// Any one protocol step: from sending a message to receiving the answer.
    public var step: Duration
    /// From `secondFactorChallenge` to the second-factor response: a person types a PIN.
    public var secondFactor: Duration

    public init(step: Duration = .seconds(5), secondFactor: Duration = .seconds(30)) {
        self.step = step
        self.secondFactor = secondFactor
    }
}
