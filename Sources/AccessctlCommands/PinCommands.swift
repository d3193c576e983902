import AccessCore
import ArgumentParser
import ControlSocket

#if canImport(Glibc)
    import Glibc
#endif

/// `accessctl credentials pin ID`: change a credential's PIN (the old one proves it, counted
/// as an attempt). `accessctl credentials unlock ID`: lift a lock-out after the person was
/// checked another way.
struct ChangePin: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin",
        abstract: "Change a credential's PIN: the old PIN, then the new one twice, without echo.",
        discussion: "With --pin-stdin: two lines, the old PIN and the new one. A wrong old PIN counts as an attempt.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The credential id (or a unique prefix).", completion: LiveCompletions.credentials) var id: String
    @Flag(help: "Read the old and the new PIN from standard input, one line each.") var pinStdin = false

    func run() throws {
        let oldPin: String
        let newPin: String
        if pinStdin {
            guard let old = readLine(), let new = readLine(), !old.isEmpty, !new.isEmpty else {
                throw ValidationError("two lines on standard input: the old PIN and the new one")
            }
            (oldPin, newPin) = (old, new)
        } else {
            guard PinPrompt.hasTerminal else {
                throw ValidationError("no terminal to ask for the PINs: give --pin-stdin")
            }
            guard let old = PinPrompt.read("Current PIN: "), !old.isEmpty else { throw ValidationError("no PIN given") }
            guard let new = try PinPrompt.askTwice() else { throw ValidationError("no new PIN given") }
            (oldPin, newPin) = (old, new)
        }
        guard (try? PIN.validate(newPin)) != nil else {
            throw ValidationError(
                "a PIN is \(PIN.allowedLengths.lowerBound) to \(PIN.allowedLengths.upperBound) digits")
        }
        let connection = try options.connect()
        let (credential, raw) = try options.call(
            connection, ControlCalls.CredentialsSetPin.self,
            SetPinParams(id: id, oldPin: oldPin, newPin: newPin))
        print(options.json ? raw.jsonText : "PIN changed for \(credential.id)")
    }
}

struct Unlock: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Lift a second-factor lock-out (after wrong PINs), once the person was checked another way.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The credential id (or a unique prefix).", completion: LiveCompletions.credentials) var id: String

    func run() throws {
        let connection = try options.connect()
        let (credential, raw) = try options.call(
            connection, ControlCalls.CredentialsUnlock.self, CredentialIDParams(id: id))
        print(
            options.json
                ? raw.jsonText : "unlocked \(credential.id): \(credential.secondFactor.attemptsLeft) attempts left")
    }
}

struct Priority: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Set a credential's priority: where readers of several sites are in range, a higher one's goes first.",
        discussion: "-100 to 100; 0 by default. Between readers of sites of equal priority, the nearer goes first.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The credential id (or a unique prefix).", completion: LiveCompletions.credentials) var id: String
    // Unconditional: a negative priority ("-5") is a value, not an option.
    @Argument(parsing: .allUnrecognized, help: "The priority (-100 to 100).") var priority: [String] = []

    func validate() throws {
        guard priority.count == 1, let value = Int(priority[0]), (-100...100).contains(value) else {
            throw ValidationError("give one priority, a whole number from -100 to 100")
        }
    }

    func run() throws {
        let connection = try options.connect()
        let (credential, raw) = try options.call(
            connection, ControlCalls.CredentialsSetPriority.self,
            PriorityParams(id: id, priority: Int(priority[0]) ?? 0))
        print(options.json ? raw.jsonText : "\(credential.id): priority \(credential.priority)")
    }
}
