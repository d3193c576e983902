import AccessCore
import AccessJSON
import ArgumentParser
import ControlSocket

#if canImport(Glibc)
    import Glibc
#endif

/// Exit statuses (documented in docs/protocol.md and `accessctl --help`).
enum Exit {
    /// accessd answered with an error.
    static let refused: Int32 = 1
    /// A value not accepted, by accessctl or by accessd (EX_USAGE, ArgumentParser's too).
    static let usage: Int32 = 64
    /// accessd is not reachable on the socket (EX_UNAVAILABLE).
    static let unreachable: Int32 = 69
    /// The caller's role does not allow it (EX_NOPERM).
    static let forbidden: Int32 = 77
    /// accessd took the connection but did not answer in time, or refused it as busy
    /// (EX_TEMPFAIL: try again).
    static let timedOut: Int32 = 75
}

struct AccessctlCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accessctl",
        abstract: "Query and control a running accessd over its Unix socket.",
        discussion: """
            Exit status: 0 success, 1 accessd refused the request, 64 bad usage, \
            69 accessd not reachable, 75 accessd did not answer in time, 77 not permitted for your user. \
            ACCESSD_SOCKET in the environment names the socket when --socket is not given.
            """,
        version: AccessCoreVersion.string,
        subcommands: [
            Status.self, Readers.self, Probe.self, Access.self, OpenNext.self, Actions.self, Action.self, Pin.self,
            Scan.self, Auto.self, Events.self,
            Credentials.self, Items.self, LogLevel.self, Diagnose.self,
        ]
    )

    static func main() {
        let arguments = CommandLineGrammar.rearranged(Array(CommandLine.arguments.dropFirst()))
        let names = configuration.subcommands.map { $0._commandName }
        if let refusal = CommandLineGrammar.unknownSubcommand(in: arguments, names: names) {
            printError(refusal)
            Glibc.exit(ExitCode.validationFailure.rawValue)
        }
        var command: any ParsableCommand
        do {
            command = try parseAsRoot(arguments)
        } catch {
            exit(withError: error)
        }
        do {
            try command.run()
        } catch let refusal as ValidationError {
            // A value refused while running (two PINs that differ, no PIN on standard input):
            // said in one line, as accessd's refusals are. ArgumentParser would add the top
            // level's usage, which is about none of it (issue #35).
            printError("accessctl: \(refusal.message)")
            Glibc.exit(ExitCode.validationFailure.rawValue)
        } catch {
            exit(withError: error)
        }
    }
}

struct GlobalOptions: ParsableArguments {
    @Option(help: "accessd's control socket (default: $ACCESSD_SOCKET, else /run/accessd/accessd.sock).")
    var socket: String = getenv("ACCESSD_SOCKET").map { String(cString: $0) } ?? "/run/accessd/accessd.sock"
    @Flag(help: "Print JSON (one object per line) for scripts.") var json = false
    @Option(
        help: ArgumentHelp(
            "Seconds to wait for each answer.",
            discussion: """
                Default 5; 60 for access, actions, action and pin (an exchange with a second factor); \
                30 for the calls that reach the site (credentials register and delete, items sync) and \
                for credentials pin.
                """, valueName: "seconds"))
    var timeout: Double?

    /// What a call may take unless --timeout says otherwise.
    private func answerTimeout(for method: ControlMethod) -> Duration {
        if let timeout { return .milliseconds(Int64(max(0.1, timeout) * 1000)) }
        switch method {
        case .accessRequest, .actionsList, .actionsPerform, .secondFactorRespond: return .seconds(60)
        // Listens up to 60 s before it answers.
        case .readersProbe: return .seconds(65)
        // A PIN change runs the slow key derivation twice.
        case .credentialsRegister, .credentialsDelete, .itemsSync, .credentialsSetPin: return .seconds(30)
        default: return .seconds(5)
        }
    }

    func connect() throws -> ControlConnection {
        do {
            return try ControlConnection(path: socket)
        } catch {
            if case .cannotConnect(_, let code) = error, code == EACCES {
                printError("accessctl: \(error): your user may not use accessd's socket (join group accessd)")
            } else {
                printError("accessctl: \(error) (is accessd running? see `systemctl status accessd`)")
            }
            throw ExitCode(Exit.unreachable)
        }
    }

    /// `connect()`, or with `wait` (`--wait` of the follow modes) until accessd's socket
    /// answers, as `journalctl -f` starts before the service: said once on stderr, tried
    /// again every 0.25 s doubling to 2 s. A socket the user may not use is not waited for.
    func connect(waiting wait: Bool) throws -> ControlConnection {
        guard wait else { return try connect() }
        var delay = Duration.milliseconds(250)
        var said = false
        while true {
            do {
                return try ControlConnection(path: socket)
            } catch {
                if case .cannotConnect(_, let code) = error, code == EACCES { return try connect() }
                if !said {
                    printError("accessctl: waiting for accessd at \(socket) (\(error))")
                    said = true
                }
            }
            sleepFor(delay)
            delay = min(delay * 2, .seconds(2))
        }
    }

    /// Calls a method in the contract's types; the answer as it came too (for `--json`).
    func call<Call: ControlCall>(
        _ connection: ControlConnection, _ call: Call.Type, _ params: Call.Params,
        onNotification: ((JSONValue) -> Void)? = nil, passing: Set<String> = []
    ) throws -> (answer: Call.Answer, raw: JSONValue) {
        let raw: JSONValue
        do {
            raw = try self.call(
                connection, Call.method, try JSONValue(encoding: params), onNotification: onNotification,
                passing: passing)
            return (try raw.decode(Call.Answer.self), raw)
        } catch let error as RPCError {
            printError(
                "accessctl: accessd's answer to \(Call.method.rawValue) is not what this accessctl "
                    + "\(AccessCoreVersion.string) reads (\(error.message)): are both from the same package?")
            throw ExitCode(Exit.refused)
        }
    }

    func call<Call: ControlCall>(_ connection: ControlConnection, _ call: Call.Type) throws -> (
        answer: Call.Answer, raw: JSONValue
    )
    where Call.Params == NoParams {
        try self.call(connection, call, NoParams())
    }

    /// Calls a method; prints accessd's refusal and exits with its status on error, except
    /// for refusals whose `error` is in `passing`: those are thrown as `PassedRefusal`, for
    /// the command to handle. Notifications that arrive meanwhile go to `onNotification`.
    func call(
        _ connection: ControlConnection, _ method: ControlMethod, _ params: JSONValue = [:],
        onNotification: ((JSONValue) -> Void)? = nil, passing: Set<String> = []
    ) throws -> JSONValue {
        let result: Result<JSONValue, RPCError>
        do {
            connection.answerTimeout = answerTimeout(for: method)
            defer { connection.answerTimeout = nil }
            result = try connection.call(method.rawValue, params, onNotification: onNotification)
        } catch .timedOut {
            printError(
                "accessctl: accessd did not answer \(method.rawValue) within \(answerTimeout(for: method).components.seconds) s "
                    + "(stopped or hung? see `systemctl status accessd`; a longer wait: --timeout)")
            throw ExitCode(Exit.timedOut)
        } catch {
            printError("accessctl: \(error)")
            throw ExitCode(Exit.unreachable)
        }
        switch result {
        case .success(let value):
            return value
        case .failure(let error) where error.refusesTheConnection:
            printError("accessctl: accessd refused the connection: \(error.message)")
            throw ExitCode(Exit.timedOut)
        case .failure(let error) where error.data?["error"]?.string.map(passing.contains) == true:
            throw PassedRefusal(error: error)
        case .failure(let error):
            let reason = error.data?["error"]?.string
            if let left = error.data?["attemptsLeft"]?.int, !json {
                printError("accessctl: \(error.message) (\(left) attempts left)")
                throw ExitCode(Exit.refused)
            }
            if json {
                var object: [String: JSONValue] = ["code": .int(Int64(error.code)), "message": .string(error.message)]
                if let reason { object["error"] = .string(reason) }
                print(JSONValue.object(["error": .object(object)]).jsonText)
            } else {
                printError("accessctl: \(error.message)\(reason.map { " (\($0))" } ?? "")")
            }
            switch error.code {
            case RPCError.forbiddenCode: throw ExitCode(Exit.forbidden)
            // accessd found a value the person typed out of its bounds: bad usage, as when
            // accessctl finds it itself (issue #35: `log verbose` exited 1).
            case RPCError.invalidParamsCode: throw ExitCode(Exit.usage)
            default: throw ExitCode(Exit.refused)
            }
        }
    }
}

/// A refusal a command asked to handle itself (`call(passing:)`).
struct PassedRefusal: Error {
    let error: RPCError
}

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "accessd's state: scanning, SDK states, adapter, counts.")
    @OptionGroup var options: GlobalOptions

    func run() throws {
        let connection = try options.connect()
        let (status, raw) = try options.call(connection, ControlCalls.StatusGet.self)
        if options.json {
            print(raw.jsonText)
            return
        }
        for line in StatusText.lines(status) { print(line) }
    }
}

struct Scan: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Turn scanning on or off (kept across restarts).")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "on or off") var state: OnOff

    func run() throws {
        try setSwitch(options, ControlCalls.ScanningSet.self, state: state, label: "scanning")
    }
}

struct Auto: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Turn automatic access on or off (kept across restarts).")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "on or off") var state: OnOff

    func run() throws {
        try setSwitch(options, ControlCalls.AutomaticAccessSet.self, state: state, label: "automatic access")
    }
}

/// An operator's on/off setting: one call, one line of output.
func setSwitch<Call: ControlCall>(_ options: GlobalOptions, _ call: Call.Type, state: OnOff, label: String) throws
where Call.Params == SwitchParams {
    let connection = try options.connect()
    let (_, raw) = try options.call(connection, call, SwitchParams(enabled: state == .on))
    print(options.json ? raw.jsonText : "\(label) \(state.rawValue)")
}

struct LogLevel: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log", abstract: "Set accessd's log level until its next restart.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "trace, debug, info, notice, warning, error or critical", completion: LiveCompletions.logLevels)
    var level: String

    func run() throws {
        let connection = try options.connect()
        let (_, raw) = try options.call(connection, ControlCalls.LogSetLevel.self, LogLevelParams(level: level))
        print(options.json ? raw.jsonText : "log level \(level)")
    }
}

enum OnOff: String, ExpressibleByArgument, CaseIterable {
    case on, off
}

func onOff(_ value: Bool) -> String { value ? "on" : "off" }

func printError(_ text: String) {
    let line = TerminalText.fitted(text) + "\n"
    _ = line.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
}
