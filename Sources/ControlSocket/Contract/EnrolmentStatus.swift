/// `status.get`'s `enrolment`: the invitation file a provisioning tool left for accessd
/// (docs/fleet.md, "Enrolling a hundred kiosks"); absent when there was none at start.
public struct EnrolmentStatus: Codable, Sendable, Hashable {
    /// The file read.
    public var file: String
    public var state: State
    /// `registered`: the credential it gave.
    public var credential: String?
    /// `retrying`, `failed`: the stable name of the last failure (`site.unreachable`,
    /// `invitation.used`, …) and what it said.
    public var error: String?
    public var message: String?
    /// `retrying`: seconds until the next attempt.
    public var retryInSeconds: Int?

    public init(
        file: String, state: State, credential: String? = nil, error: String? = nil, message: String? = nil,
        retryInSeconds: Int? = nil
    ) {
        self.file = file
        self.state = state
        self.credential = credential
        self.error = error
        self.message = message
        self.retryInSeconds = retryInSeconds
    }

    public struct State: RawRepresentable, Codable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Being registered.
        public static let registering = Self(rawValue: "registering")
        /// Registered; the file was removed.
        public static let registered = Self(rawValue: "registered")
        /// The site could not be asked (unreachable, timed out, failing): tried again later.
        public static let retrying = Self(rawValue: "retrying")
        /// Refused for good (used, expired, unknown, malformed, needs a PIN, a credential for
        /// that site already held): not tried again; the file was renamed to FILE.failed.
        public static let failed = Self(rawValue: "failed")
    }
}
