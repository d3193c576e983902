import AccessCore
import AccessJSON
import ArgumentParser
import ControlSocket

#if canImport(Glibc)
    import Glibc
#endif

struct Credentials: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Register, list and delete credentials (root or the admin group).",
        subcommands: [List.self, Register.self, Delete.self, ChangePin.self, Unlock.self, Priority.self],
        defaultSubcommand: List.self)

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Credentials held, with state and second factor.")
        @OptionGroup var options: GlobalOptions

        func run() throws {
            let connection = try options.connect()
            let (list, raw) = try options.call(connection, ControlCalls.CredentialsList.self)
            let credentials = list.credentials
            if options.json {
                for credential in raw["credentials"]?.array ?? [] { print(credential.jsonText) }
                return
            }
            if credentials.isEmpty {
                print("(no credentials: register one with `accessctl credentials register URL`)")
                return
            }
            for c in credentials {
                let second = c.secondFactor
                let pin =
                    second.required
                    ? (second.lockedOut ? "PIN locked" : second.pinSet ? "PIN set" : "PIN required but not set")
                    : "no second factor"
                print("\(c.id)  \(c.state)")
                print("  cardholder: \(c.cardholderName)")
                print("  site:       \(c.siteName) (\(c.site), \(c.siteURL))")
                print("  key:        \(c.fingerprint ?? "unavailable: \(c.keyProblem ?? "unreadable")")")
                print(
                    "  second factor: \(pin); items: \(c.itemCount)"
                        + (c.priority != 0 ? "; priority \(c.priority)" : ""))
            }
        }
    }

    struct Register: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register an invitation: by URL, or by --host and --code.",
            discussion: """
                When the site asks for a second factor on this credential, a PIN is asked for twice \
                without echo (or read from standard input with --pin-stdin); otherwise none is asked \
                (--ask-pin sets one anyway). A second-factor invitation is never used without a PIN.
                """)
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The invitation URL.") var url: String?
        @Option(help: "The site's host (with the code, instead of a URL).") var host: String?
        @Option(help: "The invitation code.") var code: String?
        @Option(help: "The name the site shows for this device (default: accessd's).") var deviceName: String?
        @Flag(help: "Set no PIN, and do not ask (refused when the site asks for one).") var noPin = false
        @Flag(help: "Read the PIN from standard input (one line), for scripts.") var pinStdin = false
        @Flag(help: "Set a PIN although the site does not ask for one (asked twice).") var askPin = false
        @Flag(help: "Replace the credential held for that site (it is deleted, and its site told).") var replace = false

        static let secondFactorRequired = "invitation.secondFactorRequired"

        func validate() throws {
            guard (url != nil) != (host != nil || code != nil), url != nil || (host != nil && code != nil) else {
                throw ValidationError("give an invitation URL, or --host and --code")
            }
            guard [noPin, pinStdin, askPin].filter({ $0 }).count <= 1 else {
                throw ValidationError("--no-pin, --pin-stdin and --ask-pin exclude each other")
            }
            if askPin && !PinPrompt.hasTerminal {
                throw ValidationError("no terminal to ask for a PIN: give --pin-stdin (the PIN on standard input)")
            }
        }

        func run() throws {
            var params = RegisterParams(
                url: url, host: host, code: code, deviceName: deviceName, replace: replace ? true : nil)
            if pinStdin {
                guard let line = readLine(), !line.isEmpty else { throw ValidationError("no PIN on standard input") }
                params.pin = line
            } else if askPin {
                params.pin = try PinPrompt.askTwice()
            }
            let connection = try options.connect()
            // The site may take up to [site] request_timeout: say what is being waited for.
            if isatty(2) == 1 && !options.json { printError("registering with the site…") }
            var registered: (answer: CredentialInfo, raw: JSONValue)
            do {
                registered = try options.call(
                    connection, ControlCalls.CredentialsRegister.self, params,
                    passing: params.pin == nil ? [Self.secondFactorRequired] : [])
            } catch let refusal as PassedRefusal {
                // The site asks for a second factor and refused the invitation without one,
                // leaving it unused (issue #35: it registered a credential that could never
                // get a PIN): the PIN now, or why it cannot be asked.
                guard !noPin else {
                    printError("accessctl: \(refusal.error.message): this invitation needs a PIN; run without --no-pin")
                    throw ExitCode(Exit.refused)
                }
                guard PinPrompt.hasTerminal else {
                    printError(
                        "accessctl: \(refusal.error.message): give the PIN on standard input with --pin-stdin")
                    throw ExitCode(Exit.refused)
                }
                printError("The site asks for a second factor: set this credential's PIN.")
                guard let pin = try PinPrompt.askTwice(optional: false) else { throw ExitCode(Exit.refused) }
                params.pin = pin
                registered = try options.call(connection, ControlCalls.CredentialsRegister.self, params)
            }
            let (credential, raw) = registered
            if options.json {
                print(raw.jsonText)
                return
            }
            print("registered \(credential.id) for \(credential.cardholderName) at \(credential.siteName)")
            if let fingerprint = credential.fingerprint { print("key fingerprint: \(fingerprint)") }
            if credential.secondFactor.required && !credential.secondFactor.pinSet {
                print("note: the site asks for a second factor and no PIN was set; readers that require one will deny")
            }
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a credential at its site and here.",
            discussion: "As the SDK's DeleteOption: by default nothing is deleted when the site cannot be told; "
                + "--allow-offline deletes here anyway; --offline-only does not contact the site (not recommended: "
                + "the site keeps the credential until its administrator revokes it).")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The credential id (or a unique prefix).", completion: LiveCompletions.credentials) var id:
            String
        @Flag(help: "Delete here even if the site cannot be told.") var allowOffline = false
        @Flag(help: "Delete here only, without contacting the site.") var offlineOnly = false

        func validate() throws {
            guard !(allowOffline && offlineOnly) else {
                throw ValidationError("--allow-offline and --offline-only exclude each other")
            }
        }

        func run() throws {
            let option: DeleteOption = offlineOnly ? .offlineOnly : allowOffline ? .allowOffline : .default
            let connection = try options.connect()
            let (result, raw) = try options.call(
                connection, ControlCalls.CredentialsDelete.self, DeleteParams(id: id, option: option))
            if options.json {
                print(raw.jsonText)
            } else if result.siteInformed {
                print("deleted \(result.id); the site was told")
            } else {
                print(
                    "deleted \(result.id) here; the site was NOT told (\(result.siteError ?? "?")): ask its administrator to revoke it"
                )
            }
        }
    }
}

struct Items: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Items sites pushed to credentials (Aperio, Salto, Digital ID).",
        subcommands: [List.self, Sync.self], defaultSubcommand: List.self)

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Items held (secrets are never shown).")
        @OptionGroup var options: GlobalOptions

        func run() throws {
            let connection = try options.connect()
            let (list, raw) = try options.call(connection, ControlCalls.ItemsList.self)
            if options.json {
                for item in raw["items"]?.array ?? [] { print(item.jsonText) }
                return
            }
            if list.items.isEmpty { print("(no items)") }
            for item in list.items { print("\(item.id)  \(item.type)  \(item.state)  \(item.name)") }
        }
    }

    struct Sync: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Sync credential state and items with the sites now.")
        @OptionGroup var options: GlobalOptions

        func run() throws {
            let connection = try options.connect()
            let (result, raw) = try options.call(connection, ControlCalls.ItemsSync.self)
            // The same exit status with or without --json: 1 when a credential's sync failed.
            let failed = result.credentials.contains { $0.error != nil }
            if options.json {
                print(raw.jsonText)
                if failed { throw ExitCode(Exit.refused) }
                return
            }
            for c in result.credentials {
                if let error = c.error {
                    print("\(c.id)  failed: \(error) (\(c.message ?? ""))")
                } else {
                    print("\(c.id)  \(c.state ?? "?")  +\(c.added ?? 0) ~\(c.updated ?? 0) -\(c.removed ?? 0)")
                }
            }
            if failed { throw ExitCode(Exit.refused) }
        }
    }
}

/// Reads a PIN from the terminal without echo.
enum PinPrompt {
    /// Whether a person can be asked: a controlling terminal to prompt on (as ssh and sudo ask).
    static var hasTerminal: Bool {
        let tty = open("/dev/tty", O_RDWR)
        guard tty >= 0 else { return false }
        close(tty)
        return true
    }

    static func read(_ prompt: String) -> String? {
        let tty = open("/dev/tty", O_RDWR)
        let fd = tty >= 0 ? tty : 0
        defer { if tty >= 0 { close(tty) } }
        // Echo goes off before the prompt is shown (as readpassphrase(3) does): a person who
        // types as soon as the prompt appears must neither see the PIN echoed nor lose it to the
        // flush that switching echo off performs.
        var saved = termios()
        let isTerminal = tcgetattr(fd, &saved) == 0
        if isTerminal {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(fd, TCSAFLUSH, &quiet)
        }
        defer {
            if isTerminal {
                tcsetattr(fd, TCSANOW, &saved)
                _ = write(fd, "\n", 1)
            }
        }
        _ = prompt.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while Glibc.read(fd, &byte, 1) == 1 && byte != UInt8(ascii: "\n") && bytes.count < 64 { bytes.append(byte) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Nil when the person enters nothing (no PIN) where a PIN is `optional`; throws after
    /// three tries without a PIN of the right format entered twice the same.
    static func askTwice(optional: Bool = true) throws -> String? {
        // The format is checked before the PIN is asked again (three tries).
        for _ in 0..<3 {
            let first = read("PIN for the second factor (4-12 digits\(optional ? "; empty for none" : "")): ")
            guard let first, !first.isEmpty else {
                if optional { return nil }
                printError("accessctl: this credential needs a PIN")
                continue
            }
            guard (try? PIN.validate(first)) != nil else {
                printError(
                    "accessctl: a PIN is \(PIN.allowedLengths.lowerBound) to \(PIN.allowedLengths.upperBound) digits")
                continue
            }
            // Two that differ are asked again, as passwd(1) does (issue #35: it aborted).
            guard read("PIN again: ") == first else {
                printError("accessctl: the two PINs differ; again")
                continue
            }
            return first
        }
        throw ValidationError("no PIN of 4 to 12 digits given twice the same")
    }
}
