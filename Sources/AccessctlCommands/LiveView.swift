import AccessJSON
import ControlSocket

#if canImport(Glibc)
    import Glibc
#endif

/// `accessctl readers --watch` on a terminal, for a field engineer at a door (as `cgps` is for
/// a GPS): accessd's state and the clock on top; per reader its path loss placed on a scale
/// against its own auto and manual thresholds, the range it is in, distance and when it was
/// last heard; the last accesses below. Redrawn on each change and every second (ages and the
/// clock move); the screen is cleared and written whole, so a terminal of any kind shows it.
struct LiveView {
    let options: GlobalOptions
    /// Path loss the scale covers, in dB (0 at the reader … 80, far beyond any manual range).
    static let scale = 0.0...80.0
    static let barWidth = 32

    func run(_ connection: ControlConnection, readers: [ReaderInfo]) throws {
        var following = try Following(
            options: options, connection: connection,
            kinds: [
                EventKind.readerUpdated.rawValue, EventKind.readerUnavailable.rawValue,
                EventKind.accessCompleted.rawValue, EventKind.sdkState.rawValue,
            ],
            since: nil)
        var state = Screen(readers: ReaderTable.byID(readers))
        state.status = try? options.call(connection, ControlCalls.StatusGet.self).answer
        var lastPoll = ContinuousClock.now
        while true {
            draw(state)
            let wasAway = following.current == nil
            if let notification = try following.next(within: .seconds(1)) {
                state.apply(notification)
            }
            guard let current = following.current else {
                // What is on screen is as it was when accessd went: said so, the clock moves on.
                if state.awayFrom == nil { state.awayFrom = Double(time(nil)) }
                continue
            }
            state.awayFrom = nil
            // Ages and the header come from accessd once a second, and at once when it is back
            // (the table is listed afresh: readers heard before the restart may be gone);
            // events in between redraw at once.
            if wasAway || ContinuousClock.now - lastPoll >= .seconds(1) {
                lastPoll = .now
                if let listed = try? options.call(current, ControlCalls.ReadersList.self) {
                    state.readers = ReaderTable.byID(listed.answer.readers)
                }
                state.status = (try? options.call(current, ControlCalls.StatusGet.self))?.answer ?? state.status
            }
        }
    }

    private func draw(_ screen: Screen) {
        let width = Self.terminalWidth()
        let lines = Self.lines(screen, now: Double(time(nil))).map { String($0.prefix(width)) }
        printLine("\u{1B}[H\u{1B}[2J" + lines.joined(separator: "\n"))
    }

    /// What the screen shows, without terminal codes (tested as text).
    static func lines(_ screen: Screen, now: Double) -> [String] {
        var lines: [String] = []
        let clock = String(localTime(now).dropFirst(11).prefix(8))
        if let away = screen.awayFrom {
            lines.append(
                "accessd unreachable since \(localTime(away).dropFirst(11).prefix(8)): reconnecting; "
                    + "below is what it said then   \(clock)")
        } else if let status = screen.status {
            lines.append(
                "accessd \(status.version)   scanning \(status.isScanning ? "on" : "off")   adapter \(status.adapter ?? "none")"
                    + "   automatic access \(onOff(status.automaticAccessEnabled))   \(clock)")
            if !status.states.isEmpty { lines.append("states: \(status.states.joined(separator: ", "))") }
        } else {
            lines.append("accessd   \(clock)")
        }
        lines.append("")
        let legend = "0 dB" + String(repeating: " ", count: barWidth - 9) + "80 dB"
        lines.append("READER                    PATH LOSS  \(legend)  RANGE   DISTANCE  HEARD    SCOPE")
        for reader in screen.readers.values.sorted(by: { $0.id < $1.id }) {
            let label = (reader.id + " " + (reader.name ?? "")).fitted(to: 24)
            let loss = ReaderTable.decimal(reader.measuredPathLoss).leftPadded(to: 6) + " dB"
            let heard =
                screen.awayFrom != nil ? "stale" : reader.heardSecondsAgo.map { "\(ReaderTable.decimal($0)) s" } ?? "-"
            lines.append(
                "\(label)  \(loss)  \(bar(reader))  \(ReaderTable.range(reader).fitted(to: 6))"
                    + "  \(reader.distance.fitted(to: 8))  "
                    + "\(heard.fitted(to: 7))  \(ScopeText.effective(reader.scope))"
                    .trailingSpacesRemoved)
        }
        if screen.readers.isEmpty { lines.append("(no readers heard)") }
        lines.append("")
        lines.append(
            "A: auto threshold  M: manual threshold  ●: the reader now    flags: "
                + screen.readers.values
                .sorted(by: { $0.id < $1.id }).map { "\($0.id) \(ReaderTable.flags($0))" }.joined(separator: "; "))
        lines.append("")
        lines.append("LAST ACCESSES")
        lines.append(
            contentsOf: screen.accesses.isEmpty ? ["(none since this view started)"] : screen.accesses.reversed())
        return lines
    }

    /// The reader's path loss on the scale, with its thresholds: `====A●-------M.........`
    /// (`=` within auto range, `-` within manual range, `.` beyond).
    static func bar(_ reader: ReaderInfo) -> String {
        func cell(_ value: Double) -> Int {
            let clamped = min(max(value, scale.lowerBound), scale.upperBound)
            return min(
                barWidth - 1,
                Int((clamped - scale.lowerBound) / (scale.upperBound - scale.lowerBound) * Double(barWidth)))
        }
        let auto = cell(Double(reader.autoConnectPathLoss))
        let manual = cell(Double(reader.manualConnectPathLoss))
        let now = cell(reader.measuredPathLoss)
        return String(
            (0..<barWidth).map { index -> Character in
                if index == now { return "●" }
                if index == auto { return "A" }
                if index == manual { return "M" }
                return index < auto ? "=" : index < manual ? "-" : "."
            })
    }

    static func terminalWidth() -> Int {
        var size = winsize()
        guard ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 120 }
        return Int(size.ws_col)
    }

    /// What the view knows between redraws.
    struct Screen {
        var status: StatusAnswer?
        var readers: [String: ReaderInfo]
        /// Newest last, at most five.
        var accesses: [String] = []
        /// When accessd went away (wall-clock seconds), while it is.
        var awayFrom: Double?

        mutating func apply(_ notification: JSONValue) {
            guard let event = ControlEvent(eventNotification: notification) else { return }
            switch event {
            case .readerUpdated(let reader):
                readers[reader.id] = reader
            case .readerUnavailable(let gone):
                readers[gone.reader] = nil
            case .accessCompleted:
                let time = notification["params"]?["time"]?.number ?? 0
                accesses.append("\(localTime(time).dropFirst(11).prefix(8))  " + EventText.describe(event))
                if accesses.count > 5 { accesses.removeFirst() }
            default:
                break
            }
        }
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }

    /// Exactly `width` characters: cut, or padded with spaces on the right (a table's column).
    func fitted(to width: Int) -> String {
        count >= width ? String(prefix(width)) : self + String(repeating: " ", count: width - count)
    }
}
