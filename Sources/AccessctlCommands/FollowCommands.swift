import AccessJSON
import ArgumentParser
import ControlSocket

#if canImport(Glibc)
    import Glibc
#endif

/// A subscription that outlives accessd's restarts, for the follow modes: when the connection
/// is lost it says so on stderr, reconnects (0.25 s, doubling to 5 s), subscribes again after
/// the last event it handed out (so nothing is lost and nothing repeated), and says when it
/// is back. `events --follow` and `readers --watch` died with exit 69 on every restart.
///
/// Every wait has a deadline, reconnecting included: a live view redraws its clock and marks
/// what it shows stale while accessd is away (issue #35: the view froze, showing the old
/// table as live, until some reader moved after the restart).
struct Following {
    let options: GlobalOptions
    let kinds: [String]?
    /// Replay from `lastSequence` on reconnecting (events); false: live only (readers).
    let resumes: Bool
    private(set) var lastSequence: Int64
    /// Nil while accessd is away.
    private(set) var current: ControlConnection?
    /// Since when accessd has been away (nil while connected).
    private(set) var lostAt: ContinuousClock.Instant?
    private var retryAt = ContinuousClock.now
    private var retryDelay = Duration.milliseconds(250)
    /// Called on each new connection before subscribing again (readers: the table afresh).
    var reconnected: (ControlConnection) throws -> Void = { _ in }

    /// Subscribes on `connection`; the first failure exits as any call does.
    init(
        options: GlobalOptions, connection: ControlConnection, kinds: [String]?, since: Int64?, sinceTime: Double? = nil
    ) throws {
        self.options = options
        self.current = connection
        self.kinds = kinds
        resumes = since != nil || sinceTime != nil
        let answer = try options.call(
            connection, ControlCalls.EventsSubscribe.self,
            SubscribeParams(since: since, sinceTime: sinceTime, kinds: kinds)
        ).answer
        lastSequence = answer.since ?? since ?? answer.lastSequence
    }

    /// The next notification: an event after the last one handed out, or an
    /// `events.dropped` notice. Blocks; reconnects as long as it takes.
    mutating func next() throws -> JSONValue {
        while true {
            if let notification = try next(within: .seconds(3600)) { return notification }
        }
    }

    /// The next notification if one comes within `timeout`; nil otherwise (a live view
    /// redraws its clock and ages meanwhile, and says when accessd is away).
    mutating func next(within timeout: Duration) throws -> JSONValue? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard let connection = current else {
                if ContinuousClock.now >= retryAt {
                    try reconnect()
                } else {
                    sleepFor(min(retryAt, deadline) - ContinuousClock.now)
                }
                continue
            }
            guard connection.waitReadable(timeout: deadline - ContinuousClock.now) else { return nil }
            let notification: JSONValue
            do {
                notification = try connection.nextNotification()
            } catch {
                printError("accessctl: \(error); reconnecting")
                current = nil
                lostAt = .now
                retryDelay = .milliseconds(250)
                retryAt = .now + retryDelay
                continue
            }
            if let sequence = notification["params"]?["seq"]?.int {
                guard sequence > lastSequence else { continue }
                lastSequence = sequence
            }
            return notification
        }
        return nil
    }

    /// One attempt; on failure the next is due after the delay, doubling to 5 s.
    private mutating func reconnect() throws {
        retryDelay = min(retryDelay * 2, .seconds(5))
        retryAt = .now + retryDelay
        guard let fresh = try? ControlConnection(path: options.socket) else { return }
        try reconnected(fresh)
        let params = SubscribeParams(since: resumes ? lastSequence : nil, kinds: kinds)
        // Gone again before it answered: try again. A refusal (a role taken away) ends the
        // follow as it would have at the start.
        guard let result = try? fresh.call(ControlCalls.EventsSubscribe.method, JSONValue(encoding: params)) else {
            return
        }
        let answer: SubscribeAnswer
        switch result {
        case .success(let value): answer = try value.decode(SubscribeAnswer.self)
        case .failure(let error):
            printError("accessctl: accessd refused to resume: \(error.message)")
            throw ExitCode(Exit.refused)
        }
        current = fresh
        lostAt = nil
        if !resumes { lastSequence = answer.lastSequence }
        printError(
            resumes ? "accessctl: reconnected; resuming after event \(lastSequence)" : "accessctl: reconnected")
    }
}

/// Sleeps the thread (accessctl is synchronous), through signals.
func sleepFor(_ duration: Duration) {
    var left = timespec(
        tv_sec: Int(duration.components.seconds), tv_nsec: Int(duration.components.attoseconds / 1_000_000_000))
    var asked = left
    while nanosleep(&asked, &left) != 0 && errno == EINTR { asked = left }
}

/// One line to stdout at once, unbuffered: a follow mode piped into `grep` or `jq` is read
/// as it happens (stdio buffered pipes in 4 KiB blocks, and a quiet door's events sat there).
func printLine(_ text: String) {
    var line = TerminalText.fitted(text)
    line.append("\n")
    line.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let written = write(1, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 { if errno == EINTR { continue } else { return } }
            offset += written
        }
    }
}

/// An event's time for a person: local, to the millisecond.
func localTime(_ seconds: Double) -> String {
    var time = time_t(seconds.rounded(.down))
    var parts = tm()
    localtime_r(&time, &parts)
    var buffer = [CChar](repeating: 0, count: 32)
    let length = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M:%S", &parts)
    let milliseconds = String(1000 + Int((seconds - seconds.rounded(.down)) * 1000)).dropFirst()
    return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) + "." + milliseconds
}

struct Events: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print journalled events; --follow keeps printing new ones.",
        discussion: """
            With --follow, a restart of accessd is waited out: accessctl reconnects and goes on \
            after the last event it printed, saying so on stderr.
            """)
    @OptionGroup var options: GlobalOptions
    @Flag(help: "Keep printing events as they happen.") var follow = false
    @Flag(help: "With --follow: if accessd is not running yet, wait for it.") var wait = false
    @Option(
        help: ArgumentHelp(
            "Where to start (default: the last 20 events).",
            discussion:
                "A sequence number (start after it: 1200), an age (10m, 2h, 1d, 30s) or a local time (2026-11-23 08:00, 08:00 for today).",
            valueName: "seq|age|time"))
    var since: String?
    @Option(
        help: ArgumentHelp(
            "Only these kinds, comma-separated (e.g. sdk.state,reader.updated).",
            discussion: "Kinds: \(EventKind.list)."), completion: LiveCompletions.eventKinds) var kinds: String?

    private var start: EventsStart { since.flatMap { EventsStart($0) } ?? EventsStart(sequence: nil, time: nil) }

    func validate() throws {
        if wait && !follow { throw ValidationError("--wait goes with --follow") }
        if let since, EventsStart(since) == nil {
            throw ValidationError(
                "--since: a sequence number (1200), an age (10m, 2h, 1d) or a local time (2026-11-23 08:00, 08:00)")
        }
        if let first = EventKind.unknown(among: kindList ?? []).first {
            throw ValidationError("--kinds: no event kind '\(first)' (kinds: \(EventKind.list))")
        }
    }

    private var kindList: [String]? { kinds?.split(separator: ",").map { $0.trimmingWhitespace() } }

    func run() throws {
        let connection = try options.connect(waiting: wait)
        let last = try options.call(connection, ControlCalls.StatusGet.self).answer.lastSequence
        var following = try Following(
            options: options, connection: connection,
            kinds: kindList, since: start.sequence ?? (start.time == nil ? max(0, last - 20) : nil),
            sinceTime: start.time)
        while true {
            if !follow && !connection.waitReadable(timeout: .milliseconds(300)) { return }
            let notification: JSONValue
            if follow {
                notification = try following.next()
            } else {
                guard let next = try? connection.nextNotification() else { return }
                notification = next
            }
            printLine(render(notification))
        }
    }

    private func render(_ notification: JSONValue) -> String {
        let params = notification["params"] ?? .null
        if options.json {
            return notification["method"]?.string == RPCRequest.eventMethod ? params.jsonText : notification.jsonText
        }
        if notification["method"]?.string == RPCRequest.eventsDroppedMethod {
            return
                "!! missed events \(params["from"]?.int ?? 0)…\(params["to"]?.int ?? 0): run with --since to replay them"
        }
        let time: Double =
            switch params["time"] {
            case .double(let seconds)?: seconds
            case .int(let seconds)?: Double(seconds)
            default: 0
            }
        let kind = params["kind"]?.string ?? "?"
        return "\(localTime(time))  \(params["seq"]?.int ?? 0)  \(kind)  "
            + EventText.describe(kind: kind, data: params["data"] ?? .null)
    }
}
