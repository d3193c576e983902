import AccessJSON
import ArgumentParser
import ControlSocket

#if canImport(Glibc)
    import Glibc
#endif

/// `accessctl open-next`: the kiosk's "open the door" button from a terminal or a script
/// (`access.next`). Waits for the door that opens, or for the window to close without one.
struct OpenNext: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open-next",
        abstract: "Open the next door within manual range, once, within a few seconds (operator).",
        discussion: """
            For --expiry seconds (default [access] open_next_expiry, 5) the auto range is widened to the \
            manual range: the first reader this kiosk may open automatically that is within manual range \
            (the nearest, if several) is opened, once, even right after it opened. Prints its decision; \
            exit status 0 when granted, 1 when denied, failed, or no door came within the time. \
            `accessctl open-next --cancel` closes the window.
            """)
    @OptionGroup var options: GlobalOptions
    @Option(help: ArgumentHelp("Seconds the window stays open (1 to 60).", valueName: "seconds")) var expiry: Double?
    @Flag(help: "Close the open-next window instead.") var cancel = false
    @Flag(help: "If the reader asks for a PIN, read it from standard input (one line per attempt).") var pinStdin =
        false

    func validate() throws {
        if let expiry, !(1...60).contains(expiry) { throw ValidationError("--expiry is 1 to 60 seconds") }
        if cancel && expiry != nil { throw ValidationError("--cancel takes no --expiry") }
    }

    func run() throws {
        let connection = try options.connect()
        if cancel {
            let (answer, raw) = try options.call(connection, ControlCalls.AccessCancel.self)
            print(
                options.json
                    ? raw.jsonText : answer.cancelled ? "open-next window closed" : "no open-next window was open")
            return
        }
        let kinds: [EventKind] = [.accessNextWindow, .accessStarted, .accessCompleted, .secondFactorRequired]
        _ = try options.call(
            connection, ControlCalls.EventsSubscribe.self, SubscribeParams(kinds: kinds.map(\.rawValue)))
        var wait = Wait()
        let (answer, _) = try options.call(
            connection, ControlCalls.AccessNext.self, OpenNextParams(expiry: expiry),
            onNotification: { wait.handle($0, self) })
        if isatty(2) == 1 && !options.json {
            printError("open-next: the next door within manual range opens for \(answer.expirySeconds) s…")
        }
        // The window, then an exchange (with a PIN, up to the reader's wait for it).
        let deadline = ContinuousClock.now + .seconds(answer.expirySeconds) + .seconds(120)
        while wait.result == nil {
            let left = deadline - ContinuousClock.now
            guard left > .zero, connection.waitReadable(timeout: left) else {
                printError("accessctl: no word from accessd on the open-next window (see accessctl events)")
                throw ExitCode(Exit.timedOut)
            }
            do {
                wait.handle(try connection.nextNotification(), self)
            } catch {
                printError("accessctl: \(error)")
                throw ExitCode(Exit.unreachable)
            }
        }
        switch wait.result {
        case .completed(let data, let answer)?:
            print(
                options.json
                    ? data.jsonText
                    : "reader \(answer.reader)\(answer.readerName.map { " (\($0))" } ?? ""): "
                        + describeOutcome(answer))
            if answer.granted != true { throw ExitCode(Exit.refused) }
        case .closed(let reason, let data)?:
            print(
                options.json
                    ? data.jsonText
                    : reason == "expired"
                        ? "no door within manual range in \(answer.expirySeconds) s" : "open-next: \(reason)")
            throw ExitCode(Exit.refused)
        case nil:
            break
        }
    }

    /// What the events said so far.
    struct Wait {
        enum Result {
            case completed(JSONValue, ExchangeAnswer)
            case closed(String, JSONValue)
        }

        var reader: String?
        var result: Result?

        mutating func handle(_ notification: JSONValue, _ command: OpenNext) {
            guard let event = ControlEvent(eventNotification: notification) else { return }
            let data = notification["params"]?["data"] ?? .null
            switch event {
            case .accessNextWindow(let window):
                guard window.state == .closed else { return }
                if window.reason == .used {
                    reader = window.reader
                } else if reader == nil {
                    result = .closed(window.reason?.rawValue ?? "closed", data)
                }
            case .accessStarted(let started):
                if let reader, started.reader == reader, isatty(2) == 1, !command.options.json {
                    printError("connecting to reader \(reader)…")
                }
            case .secondFactorRequired(let prompt):
                guard let reader, prompt.reader == reader else { return }
                InlinePrompt(options: command.options, reader: reader, pinStdin: command.pinStdin).handle(notification)
            case .accessCompleted(let answer):
                guard let reader, answer.reader == reader, answer.trigger == AccessTrigger.openNext else { return }
                result = .completed(data, answer)
            default:
                break
            }
        }
    }
}
