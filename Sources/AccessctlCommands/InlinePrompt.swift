import AccessCore
import AccessJSON
import ControlSocket

#if canImport(Glibc)
    import Glibc
#endif

/// Answers, from the command that asked for the exchange, the second-factor prompt its reader
/// opens: `accessctl access` subscribes to `secondFactor.required` on its own connection before
/// asking, and when its reader asks for a PIN, reads one (without echo on the terminal, or a
/// line of standard input with --pin-stdin) and sends it on a second connection while the
/// first still waits for the decision. Without a terminal or --pin-stdin it says how to
/// answer from elsewhere (`accessctl pin`), and waits.
struct InlinePrompt {
    let options: GlobalOptions
    let reader: String
    let pinStdin: Bool
    /// Progress goes to a terminal only: a script reads the decision and the exit status.
    let showsProgress = isatty(2) == 1

    /// Subscribes `connection` to the prompts and starts of exchanges, before the request.
    func prepare(_ connection: ControlConnection) throws {
        _ = try options.call(
            connection, ControlCalls.EventsSubscribe.self,
            SubscribeParams(kinds: [EventKind.secondFactorRequired.rawValue, EventKind.accessStarted.rawValue]))
        if showsProgress && !options.json { printError("asking reader \(reader)…") }
    }

    /// Handles one notification that arrived while the request waits.
    func handle(_ notification: JSONValue) {
        guard let event = ControlEvent(eventNotification: notification), event.reader == reader else { return }
        switch event {
        case .accessStarted(let started):
            if showsProgress && !options.json && started.origin == "manual" { printError("connecting…") }
        case .secondFactorRequired(let prompt):
            answer(prompt)
        default:
            break
        }
    }

    private func answer(_ prompt: SecondFactorRequiredEvent) {
        let request = prompt.request
        var attemptsLeft = prompt.attemptsLeft
        let text = prompt.prompt
        let seconds = prompt.timeoutSeconds
        let terminal = !pinStdin && PinPrompt.hasTerminal
        guard pinStdin || terminal else {
            printError(
                "accessctl: reader \(reader) asks for a PIN: answer within \(seconds) s with `accessctl pin \(request)` "
                    + "(or run with --pin-stdin)")
            return
        }
        // Format mistakes cost no attempt: asked again, at most three times in all.
        for _ in 0..<3 {
            let typed =
                pinStdin ? readLine() : PinPrompt.read("\(text) (reader \(reader), \(attemptsLeft) attempts left): ")
            guard let pin = typed, !pin.isEmpty else {
                // Nothing typed (Enter, or end of input): decline now rather than let the reader wait.
                cancel(request: request, because: "no PIN given")
                return
            }
            guard (try? PIN.validate(pin)) != nil else {
                printError(
                    "accessctl: a PIN is \(PIN.allowedLengths.lowerBound) to \(PIN.allowedLengths.upperBound) digits")
                continue
            }
            switch respond(request: request, pin: pin) {
            case .accepted:
                if showsProgress && !options.json { printError("PIN accepted; waiting for the reader…") }
                return
            case .wrong(let left):
                attemptsLeft = left
                printError("accessctl: wrong PIN (\(left) attempts left)")
                if left == 0 { return }
            case .refused(let message):
                printError("accessctl: \(message)")
                return
            }
        }
        // Three tries here and none right: declined at once, not left open and silent until
        // the reader gives up (issue #35: 27 s). The attempts left stay for the next time.
        cancel(request: request, because: "three tries")
    }

    private func cancel(request: String, because reason: String) {
        guard let connection = try? ControlConnection(path: options.socket) else { return }
        connection.answerTimeout = .seconds(5)
        if case .success? = try? connection.call(.secondFactorCancel, ["request": .string(request)]) {
            printError("accessctl: \(reason): prompt \(request) declined")
        }
    }

    private enum Response {
        case accepted
        case wrong(attemptsLeft: Int)
        case refused(String)
    }

    private func respond(request: String, pin: String) -> Response {
        do {
            let connection = try ControlConnection(path: options.socket)
            connection.answerTimeout = .seconds(30)
            switch try connection.call(.secondFactorRespond, ["request": .string(request), "pin": .string(pin)]) {
            case .success:
                return .accepted
            case .failure(let error):
                if error.data?["error"] == "secondFactor.wrongPin", let left = error.data?["attemptsLeft"]?.int {
                    return .wrong(attemptsLeft: Int(left))
                }
                return .refused(error.message)
            }
        } catch {
            return .refused("cannot send the PIN: \(error)")
        }
    }
}
