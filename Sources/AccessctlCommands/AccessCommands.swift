import AccessCore
import AccessJSON
import ArgumentParser
import ControlSocket

/// Renders an access answer (`access.completed` data) for people, with where the time went.
func describeOutcome(_ answer: ExchangeAnswer) -> String {
    outcomeText(answer) + (answer.timings.map(describeTimings) ?? "")
}

/// ` in 708 ms (connect 255, services 263, exchange 190; MTU 517)`: the phases reached, and
/// the link's MTU once known.
func describeTimings(_ timings: ExchangeTimings) -> String {
    let phases = [
        ("detection", timings.detectionMs), ("connect", timings.connectMs), ("services", timings.resolveMs),
        ("exchange", timings.exchangeMs),
    ].compactMap { name, ms in ms.map { "\(name) \(Int($0))" } }
    guard let total = timings.totalMs else { return "" }
    var detail = phases.joined(separator: ", ")
    if let mtu = timings.mtu { detail += (detail.isEmpty ? "" : "; ") + "MTU \(mtu)" }
    return " in \(Int(total)) ms" + (detail.isEmpty ? "" : " (\(detail))")
}

private func outcomeText(_ answer: ExchangeAnswer) -> String {
    switch answer.outcome {
    case "decided":
        return "\(answer.granted == true ? "granted" : "denied"): \(answer.decision ?? "?") (\(answer.mode ?? "?"))"
    case "actionPerformed":
        return "action \(answer.action ?? 0): \(answer.granted == true ? "done" : "refused"): \(answer.decision ?? "?")"
    case "failed":
        return "failed: \(answer.error ?? "?")"
    default:
        return answer.outcome
    }
}

struct Access: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ask a reader for access now (manual access); prints its decision.",
        discussion: "Exit status 0 when granted, 1 when denied or failed.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The reader id (as in `accessctl readers`).", completion: LiveCompletions.readers) var reader:
        String
    @Flag(help: "If the reader asks for a PIN, read it from standard input (one line per attempt).") var pinStdin =
        false
    @Option(
        help: ArgumentHelp(
            "Present this credential (id or unique prefix; default: the one for the reader's site).",
            valueName: "id"), completion: LiveCompletions.credentials)
    var credential: String?

    func run() throws {
        let connection = try options.connect()
        let prompt = InlinePrompt(options: options, reader: canonicalReader(reader), pinStdin: pinStdin)
        try prompt.prepare(connection)
        let (result, raw) = try options.call(
            connection, ControlCalls.AccessRequest.self,
            ReaderParams(reader: reader, credential: credential),
            onNotification: prompt.handle)
        print(options.json ? raw.jsonText : describeOutcome(result))
        if result.granted != true { throw ExitCode(Exit.refused) }
    }
}

struct Actions: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the actions a reader offers this credential.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The reader id.", completion: LiveCompletions.readers) var reader: String
    @Argument(parsing: .allUnrecognized, help: .hidden) var extra: [String] = []

    func validate() throws {
        // `actions 2A01 2`: people reach for the list command to perform one.
        if let action = extra.first {
            throw ValidationError(
                "actions lists a reader's actions; to perform one: accessctl action \(reader) \(action)")
        }
    }

    func run() throws {
        let connection = try options.connect()
        let (result, raw) = try options.call(connection, ControlCalls.ActionsList.self, ReaderParams(reader: reader))
        if options.json {
            print(raw.jsonText)
            return
        }
        let actions = result.actions ?? []
        if actions.isEmpty { print("(no actions)") }
        for action in actions { print("\(action.id)  \(action.name)  (\(action.type))") }
    }
}

struct Action: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Perform one of a reader's actions (see `accessctl actions`).")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The reader id.", completion: LiveCompletions.readers) var reader: String
    @Argument(help: "The action id.") var action: Int
    @Flag(help: "If the reader asks for a PIN, read it from standard input (one line per attempt).") var pinStdin =
        false

    func run() throws {
        let connection = try options.connect()
        let prompt = InlinePrompt(options: options, reader: canonicalReader(reader), pinStdin: pinStdin)
        try prompt.prepare(connection)
        let (result, raw) = try options.call(
            connection, ControlCalls.ActionsPerform.self,
            ActionParams(reader: reader, action: action), onNotification: prompt.handle)
        print(options.json ? raw.jsonText : describeOutcome(result))
        if result.granted != true { throw ExitCode(Exit.refused) }
    }
}

struct Pin: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Answer a second-factor prompt (secondFactor.required) with the PIN, read without echo.")
    @OptionGroup var options: GlobalOptions
    @Argument(
        help: "The request from the secondFactor.required event (default: the one open prompt).",
        completion: LiveCompletions.prompts) var request: String?
    @Flag(help: "Read the PIN from standard input (one line), for scripts.") var pinStdin = false
    @Flag(help: "Decline the prompt instead: the access ends userCancelled, and no attempt is spent.") var cancel =
        false

    func run() throws {
        let request = try self.request ?? onlyOpenPrompt()
        if cancel {
            let connection = try options.connect()
            let (_, raw) = try options.call(
                connection, ControlCalls.SecondFactorCancel.self, RequestParams(request: request))
            print(options.json ? raw.jsonText : "prompt \(request) declined")
            return
        }
        let pin: String
        if pinStdin {
            guard let line = readLine(), !line.isEmpty else { throw ValidationError("no PIN on standard input") }
            pin = line
        } else {
            guard let typed = PinPrompt.read("PIN: "), !typed.isEmpty else { throw ValidationError("no PIN given") }
            pin = typed
        }
        guard (try? PIN.validate(pin)) != nil else {
            throw ValidationError(
                "a PIN is \(PIN.allowedLengths.lowerBound) to \(PIN.allowedLengths.upperBound) digits")
        }
        let connection = try options.connect()
        let (_, raw) = try options.call(
            connection, ControlCalls.SecondFactorRespond.self, PinParams(request: request, pin: pin))
        print(options.json ? raw.jsonText : "PIN accepted")
    }

    /// The request of the one prompt open now; with none or several, says which there are.
    private func onlyOpenPrompt() throws -> String {
        let connection = try options.connect()
        let prompts = try options.call(connection, ControlCalls.SecondFactorList.self).answer.prompts
        if prompts.count == 1 { return prompts[0].request }
        if prompts.isEmpty {
            printError("accessctl: no second-factor prompt is open")
        } else {
            printError(
                "accessctl: \(prompts.count) prompts are open; name one: "
                    + prompts.map { "\($0.request) (reader \($0.reader), \($0.secondsLeft) s left)" }.joined(
                        separator: ", "))
        }
        throw ExitCode(Exit.refused)
    }
}

/// A reader id as accessd writes it (eight hex digits), to match its events.
func canonicalReader(_ text: String) -> String {
    ReaderID(text)?.description ?? text
}
