/// `reader.health`: one reader's health as this kiosk hears it (docs/fleet.md, "Reader
/// health"), at the end of an interval (a minute by default), when it is worth saying: the
/// reader's first, a change of its problems or figures, or every quarter hour. The MQTT bridge
/// keeps the newest retained at `<prefix>/<device>/readers/<id>/health`; the metrics turn it
/// into the `accessd_reader_*` gauges.
public struct ReaderHealthEvent: ControlEventData {
    public static let kind = EventKind.readerHealth
    public var reader: String
    public var name: String?
    /// `silent`, `fewerAdvertisements`, `moreAdvertisements`, `failingExchanges`; empty when
    /// nothing is wrong. An open list: a client reads a problem added later as a name.
    public var problems: [String]
    /// The last interval's rate; absent when the kiosk did not listen all of it or the reader
    /// had a link meanwhile.
    public var advertisementsPerMinute: Double?
    /// The usual rate learned for this reader; absent while learning (its first five intervals).
    public var usualPerMinute: Double?
    public var pathLoss: PathLoss?
    public var exchanges: Exchanges
    /// Seconds since the reader was last heard.
    public var heardSecondsAgo: Int
    /// The interval's length, in seconds (`[health] interval`).
    public var intervalSeconds: Int

    public struct PathLoss: Codable, Sendable, Hashable {
        /// dB, over the last `samples` advertisements.
        public var median: Double
        /// The interquartile range (dB): how much the path loss scatters.
        public var spread: Double
        public var samples: Int

        public init(median: Double, spread: Double, samples: Int) {
            self.median = median
            self.spread = spread
            self.samples = samples
        }
    }

    /// Exchanges with the reader over the last `windowSeconds`, by result; `failed` by the
    /// phase they failed in (`connect`, `services`, `exchange`), only failures on the reader's
    /// side of the air.
    public struct Exchanges: Codable, Sendable, Hashable {
        public var windowSeconds: Int
        public var granted: Int
        public var denied: Int
        public var failed: [String: Int]

        public init(windowSeconds: Int, granted: Int, denied: Int, failed: [String: Int]) {
            self.windowSeconds = windowSeconds
            self.granted = granted
            self.denied = denied
            self.failed = failed
        }
    }

    public init(
        reader: String, name: String?, problems: [String], advertisementsPerMinute: Double?,
        usualPerMinute: Double?, pathLoss: PathLoss?, exchanges: Exchanges, heardSecondsAgo: Int,
        intervalSeconds: Int
    ) {
        self.reader = reader
        self.name = name
        self.problems = problems
        self.advertisementsPerMinute = advertisementsPerMinute
        self.usualPerMinute = usualPerMinute
        self.pathLoss = pathLoss
        self.exchanges = exchanges
        self.heardSecondsAgo = heardSecondsAgo
        self.intervalSeconds = intervalSeconds
    }

    public var event: ControlEvent { .readerHealth(self) }
}
