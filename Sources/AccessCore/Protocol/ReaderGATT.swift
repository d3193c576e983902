/// The reader's GATT database (docs/reader-protocol.md §4).
public enum ReaderGATT {
    /// The primary service, also listed in the scan response.
    public static let serviceUUID = "6a4e0001-5c8d-4b7a-9f3e-2d1c0b8a7f60"
    /// Control point: the credential side writes fragments (write with response), the
    /// reader answers with notifications.
    public static let controlPointUUID = "6a4e0002-5c8d-4b7a-9f3e-2d1c0b8a7f60"
    /// Hold point (version 2, §6 "Standing challenges"): a reader that keeps a challenge
    /// standing on a held link has it; a holder writes `standingVersion` to it before it
    /// subscribes to ask for that. A reader without it speaks version 1 only.
    public static let holdPointUUID = "6a4e0003-5c8d-4b7a-9f3e-2d1c0b8a7f60"
    /// The byte a holder writes to the hold point: the protocol version it asks for.
    public static let standingVersion: UInt8 = 0x02
    /// Version 3 (§1.1): a reader whose hold point can also be read speaks it; a holder writes
    /// this to ask for certified challenges (and a standing one, as `standingVersion` does).
    public static let certifiedVersion: UInt8 = 0x03
    /// The default ATT MTU; every implementation must work with it.
    public static let minimumMTU = 23
}

/// The timing rules of standing challenges (docs/reader-protocol.md §6), for both sides.
public enum StandingTimings {
    /// While the holder is silent, the reader sends a fresh challenge this often.
    public static let refresh: Duration = .seconds(4)
    /// A reader accepts a response to a challenge it sent this long ago at most (the
    /// newest and the one before it: a response may cross a refresh).
    public static let lifetime: Duration = refresh * 2
    /// A holder answers a standing challenge only while it is younger than this, leaving
    /// the reader a second and a half of the lifetime for the response to arrive.
    public static let holderFreshness: Duration = lifetime - .milliseconds(1500)
    /// A reader keeps a silent holder's link at least this long, then times it out.
    public static let maximumHold: Duration = .seconds(30)
}
