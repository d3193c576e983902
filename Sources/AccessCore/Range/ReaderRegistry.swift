/// All readers currently heard, keyed by reader id.
///
/// `observe` is called for every advertisement (thousands a second), so it neither
/// allocates nor reports every RSSI tick: it returns an update only when something a client
/// cares about changed (see `ReportingPolicy`), and the auto-connect range transitions.
/// `expire` is called periodically (about once a second) and reports readers that went
/// stale or stayed beyond manual range.
public struct ReaderRegistry: Sendable {
    /// When a changed path loss alone is worth a `reader.updated`.
    public struct ReportingPolicy: Hashable, Sendable {
        /// Smallest change in measured path loss (dB) worth reporting on its own.
        public var pathLossChange: Double
        /// Smallest interval between two reports caused by path loss alone.
        public var minimumInterval: Duration

        public init(pathLossChange: Double = 2, minimumInterval: Duration = .seconds(1)) {
            self.pathLossChange = pathLossChange
            self.minimumInterval = minimumInterval
        }
    }

    /// The outcome of one observation.
    public struct Observation: Sendable {
        /// Attributes to publish, when anything worth a `reader.updated` changed.
        public var update: ReaderAttributes?
        /// Whether the reader is now in auto-connect range (with hysteresis applied).
        public var isInAutoConnectRange: Bool
        /// Whether `isInAutoConnectRange` changed with this observation.
        public var autoConnectRangeChanged: Bool
        /// Whether the reader just expired (stayed beyond manual range for `expiryDelay`).
        public var becameUnavailable: Bool
        /// Smoothed path loss after this observation.
        public var measuredPathLoss: Double
    }

    private struct Entry: Sendable {
        var attributes: ReaderAttributes
        var estimator: RangeEstimator
        var gate = ApproachGate()
        var beyondManualSince: Timestamp?
        var isAvailable = true
        var reportedPathLoss: Double
        var reportedAt: Timestamp
    }

    /// What HCI reports as a measured RSSI (127 means "not available"). `observe` takes only
    /// these: the shell refuses the rest (and an `Int64` from D-Bus would overflow the path-loss
    /// arithmetic).
    public static let measurableRSSI = -127...20

    /// Readers tracked at once, heard or expiring (a kiosk hears a handful). A new reader beyond
    /// it is refused until one expires (`[range] stale_timeout`); those tracked keep updating.
    public static let capacity = 2048

    public var isFull: Bool { entries.count >= Self.capacity }

    /// Whether an advertisement of `id` can be taken: a reader already tracked, or room.
    public func hasRoom(for id: ReaderID) -> Bool {
        index[id] != nil || entries.count < Self.capacity
    }

    public var range: RangeConfiguration
    /// Which readers may be opened and per-reader offsets; change it with `setScope`.
    public private(set) var scope = ReaderScope()
    public var reporting: ReportingPolicy
    private var index: [ReaderID: Int] = [:]
    private var entries: [Entry] = []

    public init(range: RangeConfiguration = .default, reporting: ReportingPolicy = ReportingPolicy()) {
        self.range = range
        self.reporting = reporting
    }

    public var count: Int { entries.lazy.filter(\.isAvailable).count }

    /// Available readers in auto-connect range, counted without copying them (the status and
    /// every metrics scrape ask: `readers` would copy and sort all of them each time).
    public var countInAutoConnectRange: Int {
        entries.lazy.filter { $0.isAvailable && $0.attributes.isInAutoConnectRange }.count
    }

    /// Whether a reader other than `id` is available (a rival when `id` enters range).
    /// Stops at the first one found.
    public func isAnotherReaderHeard(besides id: ReaderID) -> Bool {
        entries.contains { $0.isAvailable && $0.attributes.id != id }
    }

    public func reader(_ id: ReaderID) -> ReaderAttributes? {
        guard let position = index[id], entries[position].isAvailable else { return nil }
        return entries[position].attributes
    }

    /// Available readers, ordered by reader id.
    public var readers: [ReaderAttributes] {
        entries.filter(\.isAvailable).map(\.attributes).sorted { $0.id < $1.id }
    }

    /// Feeds one advertisement. `name` is nil when this report carried none (the last
    /// known name is kept).
    public mutating func observe(
        _ advertisement: ReaderAdvertisement,
        rssi: Int,
        address: DeviceAddress,
        name: String?,
        at now: Timestamp
    ) -> Observation {
        let pathLoss =
            Double(Int(advertisement.txPower) - rssi) + range.sensitivityOffset
            + scope.pathLossOffset(for: advertisement.readerID)

        guard let position = index[advertisement.readerID] else {
            var estimator = RangeEstimator(window: range.effectiveMedianWindow)
            var gate = ApproachGate()
            let smoothed = estimator.add(
                pathLoss, smoothingFactor: range.smoothingFactor,
                approachSmoothingFactor: range.approachSmoothingFactor)
            gate.add(estimator.median, at: now, parameters: range.gate)
            let inRange = Self.enters(
                smoothed: smoothed, below: Double(advertisement.autoConnectPathLoss),
                gate: gate, range: range)
            var attributes = makeAttributes(
                advertisement, rssi: rssi, address: address, name: name,
                smoothed: smoothed, inRange: inRange, now: now)
            attributes.scope = scope.effective(for: advertisement.readerID, offering: attributes.flags)
            index[advertisement.readerID] = entries.count
            entries.append(
                Entry(
                    attributes: attributes, estimator: estimator, gate: gate,
                    reportedPathLoss: smoothed, reportedAt: now))
            return Observation(
                update: attributes, isInAutoConnectRange: inRange,
                autoConnectRangeChanged: inRange, becameUnavailable: false,
                measuredPathLoss: smoothed)
        }
        return Self.update(
            &entries[position], advertisement, rssi: rssi, address: address, name: name,
            pathLoss: pathLoss, now: now, range: range, scope: scope, reporting: reporting)
    }

    /// A new scope (an operator's rule, a reload): each reader's smoothed path loss moves by the
    /// change of its offset at once, so a calibration shows without waiting for new samples.
    /// Returns the available readers whose attributes changed, to publish; whether one is in
    /// auto range is judged again at its next advertisement.
    public mutating func setScope(_ newScope: ReaderScope) -> [ReaderAttributes] {
        let old = scope
        scope = newScope
        var changed: [ReaderAttributes] = []
        for position in entries.indices {
            let id = entries[position].attributes.id
            let shift = newScope.pathLossOffset(for: id) - old.pathLossOffset(for: id)
            let before = entries[position].attributes
            var attributes = before
            if shift != 0 {
                entries[position].estimator.shift(by: shift)
                entries[position].gate.shift(by: shift)
                attributes.measuredPathLoss += shift
                attributes.distance = ReaderDistance.calculate(
                    measuredPathLoss: attributes.measuredPathLoss,
                    autoConnectPathLoss: Double(attributes.autoConnectPathLoss),
                    manualConnectPathLoss: Double(attributes.manualConnectPathLoss), txPower: Double(attributes.txPower)
                )
            }
            attributes.scope = newScope.effective(for: id, offering: attributes.flags)
            entries[position].attributes = attributes
            if attributes != before && entries[position].isAvailable {
                changed.append(attributes)
                entries[position].reportedPathLoss = attributes.measuredPathLoss
            }
        }
        return changed.sorted { $0.id < $1.id }
    }

    /// Whether a reader not in auto-connect range enters it: the smoothed path loss is below
    /// the threshold and, with the `trendGated` filter, the gate says it is an approach.
    static func enters(smoothed: Double, below threshold: Double, gate: ApproachGate, range: RangeConfiguration) -> Bool
    {
        guard smoothed < threshold else { return false }
        return range.filter == .medianAverage || gate.opens(below: threshold, parameters: range.gate)
    }

    private static func update(
        _ entry: inout Entry,
        _ advertisement: ReaderAdvertisement,
        rssi: Int,
        address: DeviceAddress,
        name: String?,
        pathLoss: Double,
        now: Timestamp,
        range: RangeConfiguration,
        scope: ReaderScope,
        reporting: ReportingPolicy
    ) -> Observation {
        let wasAvailable = entry.isAvailable
        if !wasAvailable {
            // Back from expiry: a new approach starts from fresh samples.
            entry.estimator.reset()
            entry.gate.reset()
            entry.beyondManualSince = nil
        }
        let smoothed = entry.estimator.add(
            pathLoss, smoothingFactor: range.smoothingFactor,
            approachSmoothingFactor: range.approachSmoothingFactor)
        entry.gate.add(entry.estimator.median, at: now, parameters: range.gate)
        var attributes = entry.attributes
        let before = attributes

        let auto = Double(advertisement.autoConnectPathLoss)
        let wasInRange = wasAvailable && before.isInAutoConnectRange
        let inRange =
            wasInRange
            ? smoothed < auto + range.autoRangeExitMargin
            : enters(smoothed: smoothed, below: auto, gate: entry.gate, range: range)

        // Expiry: beyond manual range for long enough.
        var expired = false
        if smoothed > Double(advertisement.manualConnectPathLoss) {
            let since = entry.beyondManualSince ?? now
            entry.beyondManualSince = since
            expired = now - since >= range.expiryDelay
        } else {
            entry.beyondManualSince = nil
        }

        attributes.kind = advertisement.kind
        attributes.siteTag = advertisement.siteTag
        attributes.flags = advertisement.flags.subtracting(.presence)
        attributes.txPower = Int(advertisement.txPower)
        attributes.autoConnectPathLoss = Int(advertisement.autoConnectPathLoss)
        attributes.manualConnectPathLoss = Int(advertisement.manualConnectPathLoss)
        // A presence advertisement comes from the reader's non-connectable set: it tells how
        // near the reader is, but its address is not the one to connect to.
        if !advertisement.flags.contains(.presence) { attributes.address = address }
        if let name { attributes.name = name }
        attributes.rssi = rssi
        attributes.measuredPathLoss = smoothed
        attributes.distance = ReaderDistance.calculate(
            measuredPathLoss: smoothed, autoConnectPathLoss: auto,
            manualConnectPathLoss: Double(advertisement.manualConnectPathLoss),
            txPower: Double(advertisement.txPower))
        attributes.isInAutoConnectRange = inRange && !expired
        attributes.lastSeen = now
        attributes.scope = scope.effective(for: attributes.id, offering: attributes.flags)
        entry.attributes = attributes

        if expired {
            guard wasAvailable else {
                return Observation(
                    update: nil, isInAutoConnectRange: false, autoConnectRangeChanged: false,
                    becameUnavailable: false, measuredPathLoss: smoothed)
            }
            entry.isAvailable = false
            return Observation(
                update: nil, isInAutoConnectRange: false, autoConnectRangeChanged: wasInRange,
                becameUnavailable: true, measuredPathLoss: smoothed)
        }
        if !wasAvailable && smoothed > Double(advertisement.manualConnectPathLoss) {
            // Still beyond manual range: stays unavailable until it comes closer.
            return Observation(
                update: nil, isInAutoConnectRange: false, autoConnectRangeChanged: false,
                becameUnavailable: false, measuredPathLoss: smoothed)
        }
        entry.isAvailable = true

        let significant =
            !wasAvailable
            || before.kind != attributes.kind || before.siteTag != attributes.siteTag
            || before.flags != attributes.flags || before.txPower != attributes.txPower
            || before.autoConnectPathLoss != attributes.autoConnectPathLoss
            || before.manualConnectPathLoss != attributes.manualConnectPathLoss
            || before.address != attributes.address || before.name != attributes.name
            || before.isInAutoConnectRange != attributes.isInAutoConnectRange
            || before.distance != attributes.distance || before.scope != attributes.scope
        let drifted =
            abs(smoothed - entry.reportedPathLoss) >= reporting.pathLossChange
            && now - entry.reportedAt >= reporting.minimumInterval
        var update: ReaderAttributes?
        if significant || drifted {
            update = attributes
            entry.reportedPathLoss = smoothed
            entry.reportedAt = now
        }
        return Observation(
            update: update, isInAutoConnectRange: attributes.isInAutoConnectRange,
            autoConnectRangeChanged: wasInRange != attributes.isInAutoConnectRange,
            becameUnavailable: false, measuredPathLoss: smoothed)
    }

    /// Reports readers that became unavailable by `now`: stale ones (not heard for
    /// `staleTimeout`) are forgotten; expired ones were reported by `observe` already.
    /// Readers in `linked` count as heard now: a reader stops advertising while a central is
    /// connected to it, and an exchange (a person typing a PIN, say) may outlast
    /// `staleTimeout`. Without this the reader would vanish mid-exchange and come back as a
    /// new approach, to be granted again.
    public mutating func expire(at now: Timestamp, linked: Set<ReaderID> = []) -> [ReaderID] {
        var gone: [ReaderID] = []
        var position = 0
        while position < entries.count {
            if linked.contains(entries[position].attributes.id) { entries[position].attributes.lastSeen = now }
            let entry = entries[position]
            if now - entry.attributes.lastSeen >= range.staleTimeout {
                if entry.isAvailable { gone.append(entry.attributes.id) }
                remove(at: position)
            } else {
                position += 1
            }
        }
        return gone.sorted()
    }

    /// Forgets every reader (the adapter went away, or scanning stopped): returns the ids
    /// that were available, each of which is now unavailable.
    public mutating func removeAll() -> [ReaderID] {
        let gone = entries.filter(\.isAvailable).map(\.attributes.id).sorted()
        entries.removeAll()
        index.removeAll()
        return gone
    }

    private mutating func remove(at position: Int) {
        let id = entries[position].attributes.id
        let last = entries.count - 1
        if position != last {
            entries.swapAt(position, last)
            index[entries[position].attributes.id] = position
        }
        entries.removeLast()
        index[id] = nil
    }

    private func makeAttributes(
        _ advertisement: ReaderAdvertisement, rssi: Int, address: DeviceAddress, name: String?,
        smoothed: Double, inRange: Bool, now: Timestamp
    ) -> ReaderAttributes {
        ReaderAttributes(
            id: advertisement.readerID, name: name, kind: advertisement.kind, siteTag: advertisement.siteTag,
            address: address, rssi: rssi, txPower: Int(advertisement.txPower), measuredPathLoss: smoothed,
            distance: ReaderDistance.calculate(
                measuredPathLoss: smoothed, autoConnectPathLoss: Double(advertisement.autoConnectPathLoss),
                manualConnectPathLoss: Double(advertisement.manualConnectPathLoss),
                txPower: Double(advertisement.txPower)),
            autoConnectPathLoss: Int(advertisement.autoConnectPathLoss),
            manualConnectPathLoss: Int(advertisement.manualConnectPathLoss),
            flags: advertisement.flags.subtracting(.presence), isInAutoConnectRange: inRange, lastSeen: now)
    }
}
