import ArgumentParser
import ControlSocket

/// Renders an access answer (`access.completed` data) for people.
func describeOutcome(_ data: JSONValue) -> String {
    switch data["outcome"]?.string {
    case "decided":
        return "\(data["granted"]?.bool == true ? "granted" : "denied"): \(data["decision"]?.string ?? "?") (\(data["mode"]?.string ?? "?"))"
    case "actionPerformed":
        return "action \(data["action"]?.int ?? 0): \(data["granted"]?.bool == true ? "done" : "refused"): \(data["decision"]?.string ?? "?")"
    case "failed":
        return "failed: \(data["error"]?.string ?? "?")"
    default:
        return data.jsonText
    }
}

struct Access: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ask a reader for access now (manual access); prints its decision.",
        discussion: "Exit status 0 when granted, 1 when denied or failed.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The reader id (as in `accessctl readers`).") var reader: String

    func run() throws {
        let connection = try options.connect()
        let result = try options.call(connection, .accessRequest, ["reader": .string(reader)])
        print(options.json ? result.jsonText : describeOutcome(result))
        if result["granted"]?.bool != true { throw ExitCode(Exit.refused) }
    }
}

struct Actions: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the actions a reader offers this credential.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The reader id.") var reader: String

    func run() throws {
        let connection = try options.connect()
        let result = try options.call(connection, .actionsList, ["reader": .string(reader)])
        if options.json {
            print(result.jsonText)
            return
        }
        let actions = result["actions"]?.array ?? []
        if actions.isEmpty { print("(no actions)") }
        for action in actions {
            print("\(action["id"]?.int ?? 0)  \(action["name"]?.string ?? "?")  (\(action["type"]?.string ?? "?"))")
        }
    }
}

struct Action: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Perform one of a reader's actions (see `accessctl actions`).")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The reader id.") var reader: String
    @Argument(help: "The action id.") var action: Int

    func run() throws {
        let connection = try options.connect()
        let result = try options.call(connection, .actionsPerform, ["reader": .string(reader), "action": .int(Int64(action))])
        print(options.json ? result.jsonText : describeOutcome(result))
        if result["granted"]?.bool != true { throw ExitCode(Exit.refused) }
    }
}

struct Pin: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Answer a second-factor prompt (secondFactor.required) with the PIN, read without echo.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The request from the secondFactor.required event.") var request: String
    @Flag(help: "Read the PIN from standard input (one line), for scripts.") var pinStdin = false

    func run() throws {
        let pin: String
        if pinStdin {
            guard let line = readLine(), !line.isEmpty else { throw ValidationError("no PIN on standard input") }
            pin = line
        } else {
            guard let typed = PinPrompt.read("PIN: "), !typed.isEmpty else { throw ValidationError("no PIN given") }
            pin = typed
        }
        let connection = try options.connect()
        let result = try options.call(connection, .secondFactorRespond, ["request": .string(request), "pin": .string(pin)])
        print(options.json ? result.jsonText : "PIN accepted")
    }
}
