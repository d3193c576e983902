import AccessJSON

// §4.5 `POST /v1/credentials/<id>/events`: the holder's access events for the credential,
// in journal order, each carried as the control socket sends it.

/// One journal event: `seq` is the holder's journal sequence, unique per credential, which
/// is what the site deduplicates by.
public struct AuditEvent: Codable, Sendable, Equatable {
    public var seq: Int64
    /// Seconds since the epoch, the holder's clock.
    public var time: Double
    public var kind: String
    public var data: JSONValue

    public init(seq: Int64, time: Double, kind: String, data: JSONValue) {
        self.seq = seq
        self.time = time
        self.kind = kind
        self.data = data
    }
}

/// Sequences the holder's journal no longer keeps (retention) and had not sent: events of
/// the credential may have been among them.
public struct AuditGap: Codable, Sendable, Equatable {
    public var from: Int64
    public var to: Int64

    public init(from: Int64, to: Int64) {
        self.from = from
        self.to = to
    }
}

/// The request body.
public struct AuditUploadRequest: Codable, Sendable, Equatable {
    /// Every event of the credential with a sequence up to `through` is in this batch or an
    /// earlier one.
    public var through: Int64
    public var events: [AuditEvent]
    public var gap: AuditGap?

    /// Most events in one batch, and most bytes in one body (what a site must accept).
    public static let maximumEvents = 100
    public static let maximumBody = 64 * 1024

    public init(through: Int64, events: [AuditEvent], gap: AuditGap? = nil) {
        self.through = through
        self.events = events
        self.gap = gap
    }

    /// What is wrong with a batch, in words; nil when it is well-formed. Both ends check it.
    public var problem: String? {
        if events.count > Self.maximumEvents { return "at most \(Self.maximumEvents) events in a batch" }
        if through < 0 { return "through must be a sequence number" }
        var previous: Int64 = 0
        for event in events {
            guard event.seq > previous else { return "events must be in increasing seq order, from 1" }
            guard event.seq <= through else { return "every event's seq must be at most through" }
            guard !event.kind.isEmpty, event.kind.utf8.count <= 64 else { return "kind must be 1 to 64 bytes" }
            guard event.time.isFinite else { return "time must be a number" }
            previous = event.seq
        }
        if let gap, gap.from < 1 || gap.from > gap.to || gap.to > through {
            return "gap must be from ≤ to ≤ through"
        }
        return nil
    }
}

/// The answer: the highest `through` the site has recorded for the credential. The holder
/// moves its cursor there; a batch sent again is stored once.
public struct AuditUploadAnswer: Codable, Sendable, Equatable {
    public var through: Int64

    public init(through: Int64) { self.through = through }
}
