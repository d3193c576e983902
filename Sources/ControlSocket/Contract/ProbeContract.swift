/// `readers.probe` (docs/protocol.md): every advertisement of one reader for some seconds,
/// summed up for a field engineer at the door (`accessctl probe`).

public struct ProbeParams: Codable, Sendable, Hashable {
    public var reader: String
    /// 1 to 60; 10 when absent.
    public var seconds: Double?
    public init(reader: String, seconds: Double? = nil) {
        self.reader = reader
        self.seconds = seconds
    }
}

public struct ProbeFigures: Codable, Sendable, Hashable {
    public var min: Double
    public var median: Double
    public var max: Double
    public var mean: Double
    public var deviation: Double
    public init(min: Double, median: Double, max: Double, mean: Double, deviation: Double) {
        self.min = min
        self.median = median
        self.max = max
        self.mean = mean
        self.deviation = deviation
    }
}

/// Advertisements whose raw path loss fell in `[fromDb, fromDb + 2)`.
public struct ProbeBin: Codable, Sendable, Hashable {
    public var fromDb: Int
    public var count: Int
    public init(fromDb: Int, count: Int) {
        self.fromDb = fromDb
        self.count = count
    }
}

/// Thresholds that would open from where the probe stood, and the same as an offset on
/// this kiosk (`readers.setScope {pathLossOffset}`), for a reader whose site config cannot change.
public struct ProbeCalibration: Codable, Sendable, Hashable {
    public var autoConnectPathLoss: Int
    public var manualConnectPathLoss: Int
    public var marginDb: Double
    public var kioskOffsetDb: Double
    public init(autoConnectPathLoss: Int, manualConnectPathLoss: Int, marginDb: Double, kioskOffsetDb: Double) {
        self.autoConnectPathLoss = autoConnectPathLoss
        self.manualConnectPathLoss = manualConnectPathLoss
        self.marginDb = marginDb
        self.kioskOffsetDb = kioskOffsetDb
    }
}

public struct ProbeAnswer: Codable, Sendable, Hashable {
    public var reader: String
    public var name: String?
    public var seconds: Double
    public var advertisements: Int
    /// Advertisements past what a probe keeps (6,000).
    public var dropped: Int
    public var intervalMs: ProbeFigures?
    public var rssi: ProbeFigures?
    /// Each advertisement's own path loss (transmit power − RSSI).
    public var rawPathLoss: ProbeFigures?
    /// The smoothed path loss range decisions use.
    public var pathLoss: ProbeFigures?
    public var histogram: [ProbeBin]
    public var txPower: Int?
    public var autoConnectPathLoss: Int?
    public var manualConnectPathLoss: Int?
    /// `auto`, `manual` or `out` at the end of the probe; `unheard` when it was never heard.
    public var range: String
    /// With 5 advertisements or more.
    public var calibration: ProbeCalibration?

    public init(
        reader: String, name: String?, seconds: Double, advertisements: Int, dropped: Int, intervalMs: ProbeFigures?,
        rssi: ProbeFigures?, rawPathLoss: ProbeFigures?, pathLoss: ProbeFigures?, histogram: [ProbeBin], txPower: Int?,
        autoConnectPathLoss: Int?, manualConnectPathLoss: Int?, range: String, calibration: ProbeCalibration?
    ) {
        self.reader = reader
        self.name = name
        self.seconds = seconds
        self.advertisements = advertisements
        self.dropped = dropped
        self.intervalMs = intervalMs
        self.rssi = rssi
        self.rawPathLoss = rawPathLoss
        self.pathLoss = pathLoss
        self.histogram = histogram
        self.txPower = txPower
        self.autoConnectPathLoss = autoConnectPathLoss
        self.manualConnectPathLoss = manualConnectPathLoss
        self.range = range
        self.calibration = calibration
    }
}

extension ControlCalls {
    public enum ReadersProbe: ControlCall {
        public typealias Params = ProbeParams
        public typealias Answer = ProbeAnswer
        public static let method = ControlMethod.readersProbe
    }
}
