/// The health of every reader one kiosk hears (docs/fleet.md, "Reader health"): fed each
/// reader advertisement and each exchange's end, told when the kiosk stops and starts
/// listening, and ticked (about once a second). At the end of each interval it returns the
/// records worth publishing: a reader's first, one whose problems changed or whose figures
/// moved, and every reader's again after `heartbeat` intervals. So a reader's record goes
/// out at most once an interval, and a kiosk hearing five readers publishes a few records an
/// hour when nothing changes.
public struct ReaderHealthBook: Sendable {
    public var policy: ReaderHealthPolicy
    private var windows: [ReaderID: ReaderHealthWindow] = [:]
    private var intervalStart: Timestamp?
    private var number = 0
    private var listening = false
    /// Whether the kiosk stopped listening at some point of the current interval.
    private var deafened = true
    /// Readers that took the place of another because the book was full.
    public private(set) var evicted = 0

    public init(policy: ReaderHealthPolicy = .default) {
        self.policy = policy
    }

    public var count: Int { windows.count }

    /// The kiosk scans (true) or stopped (scanning off, no adapter, the radio recovering). An
    /// interval with any time not listened measures no rate and counts no silence.
    public mutating func listening(_ on: Bool) {
        if !on { deafened = true }
        listening = on
    }

    /// One advertisement (or `reports` of them, merged while they waited; 0 for a report of
    /// its RSSI alone) of `reader`, with the path loss it was heard at.
    public mutating func heard(
        _ reader: ReaderID, pathLoss: Double, reports: Int = 1, name: String? = nil, at now: Timestamp
    ) {
        if intervalStart == nil { intervalStart = now }
        if windows[reader] == nil {
            if windows.count >= ReaderHealthPolicy.capacity,
                let oldest = windows.min(by: { $0.value.lastHeard < $1.value.lastHeard })?.key
            {
                windows[oldest] = nil
                evicted += 1
            }
            windows[reader] = ReaderHealthWindow(heardAt: now)
        }
        windows[reader]?.heard(pathLoss: pathLoss, reports: reports, name: name, at: now)
    }

    /// A reader with a link now (it stops advertising while connected).
    public mutating func linked(_ reader: ReaderID) {
        windows[reader]?.linked = true
    }

    /// An exchange with `reader` ended.
    public mutating func exchanged(_ reader: ReaderID, _ result: ReaderExchangeResult) {
        windows[reader]?.exchanged(result, interval: number)
    }

    /// Once a second or so: at the end of an interval, the records to publish, by reader id.
    /// `linked`: readers with a link now.
    public mutating func tick(at now: Timestamp, linked: Set<ReaderID> = []) -> [ReaderHealthRecord] {
        for reader in linked { windows[reader]?.linked = true }
        guard let start = intervalStart else {
            intervalStart = now
            return []
        }
        guard now - start >= policy.interval else { return [] }
        // After a suspend (several intervals at once), one interval closes: not listened.
        let listened = !deafened && listening && now - start < policy.interval * 2
        intervalStart = now
        deafened = !listening
        number += 1
        var records: [ReaderHealthRecord] = []
        for reader in windows.keys.sorted() {
            guard var window = windows[reader] else { continue }
            let measured = window.close(listened: listened, policy: policy)
            if window.silentIntervals >= policy.forgetAfter {
                windows[reader] = nil
                continue
            }
            let record = window.record(reader, interval: number, measured: measured, policy: policy, now: now)
            if Self.worthPublishing(
                record, after: window.published, intervals: number - window.publishedInterval, policy: policy)
            {
                window.published = record
                window.publishedInterval = number
                records.append(record)
            }
            windows[reader] = window
        }
        return records
    }

    /// A reader's newest record, as the last interval left it (nil: not followed).
    public func record(_ reader: ReaderID) -> ReaderHealthRecord? { windows[reader]?.published }

    /// Every reader's last published record, by reader id.
    public var records: [ReaderHealthRecord] { windows.keys.sorted().compactMap { windows[$0]?.published } }

    static func worthPublishing(
        _ record: ReaderHealthRecord, after last: ReaderHealthRecord?, intervals: Int, policy: ReaderHealthPolicy
    ) -> Bool {
        guard let last else { return true }
        if intervals >= policy.heartbeat { return true }
        if record.problems != last.problems || record.granted != last.granted || record.denied != last.denied
            || record.failed != last.failed || (record.usualPerMinute == nil) != (last.usualPerMinute == nil)
        {
            return true
        }
        if let now = record.advertisementsPerMinute, let then = last.advertisementsPerMinute {
            if abs(now - then) > max(then, 1) * 0.2 { return true }
        } else if (record.advertisementsPerMinute == nil) != (last.advertisementsPerMinute == nil) {
            return true
        }
        if let now = record.pathLossMedian, let then = last.pathLossMedian, abs(now - then) >= 3 { return true }
        return false
    }
}
