/// `status.get`'s `secrets`: how the credentials' keys are kept at rest (docs/operations.md,
/// "Secrets at rest").
public struct SecretsStatus: Codable, Sendable, Hashable {
    /// What protects the data key that seals them: `tpm2` (a copied disk opens nothing), `host`
    /// (a copied state directory opens nothing), `keyFile` (not sealed to this machine: a key file
    /// beside the state directory), `none` (no data key: nothing secret can be stored).
    public var protection: String
    /// Whether the data key is sealed to this machine (`tpm2` or `host`).
    public var sealedToMachine: Bool
    /// Where the data key was read from.
    public var keyOrigin: String?
    /// Why secrets cannot be opened or stored, when they cannot.
    public var problem: String?
    /// Credentials whose key does not open or fails its self-test (`keyUnavailable`).
    public var keyUnavailable: Int

    public init(
        protection: String, sealedToMachine: Bool, keyOrigin: String? = nil, problem: String? = nil,
        keyUnavailable: Int = 0
    ) {
        self.protection = protection
        self.sealedToMachine = sealedToMachine
        self.keyOrigin = keyOrigin
        self.problem = problem
        self.keyUnavailable = keyUnavailable
    }
}
