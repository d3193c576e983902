import ArgumentParser

#if canImport(Glibc)
    import Glibc
#endif

/// What people type before ArgumentParser reads it: global options before the subcommand
/// (`accessctl --socket P status`, as `systemctl --user status` and `chronyc -h host`
/// allow) are moved after it, since ArgumentParser takes a subcommand's options only after its
/// name; and a mistyped subcommand gets a suggestion instead of "Unexpected argument".
enum CommandLineGrammar {
    /// Options of `GlobalOptions`, and whether each takes a value.
    static let globalOptions: [String: Bool] = ["--socket": true, "--timeout": true, "--json": false]

    /// The arguments with leading global options moved to the end (before a `--`, if any).
    static func rearranged(_ arguments: [String]) -> [String] {
        var leading: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let name = String(argument.split(separator: "=", maxSplits: 1).first ?? "")
            guard let takesValue = globalOptions[name] else { break }
            leading.append(argument)
            if takesValue, !argument.contains("="), index + 1 < arguments.count {
                leading.append(arguments[index + 1])
                index += 1
            }
            index += 1
        }
        guard !leading.isEmpty else { return arguments }
        var rest = Array(arguments[index...])
        let end = rest.firstIndex(of: "--") ?? rest.endIndex
        rest.insert(contentsOf: leading, at: end)
        return rest
    }

    /// A refusal for a first word that is no subcommand, with the nearest one if it is close.
    static func unknownSubcommand(in arguments: [String], names: [String]) -> String? {
        guard let word = arguments.first, !word.hasPrefix("-"), word != "help", !names.contains(word) else {
            return nil
        }
        let nearest = names.map { (name: $0, distance: editDistance(word, $0)) }.min { $0.distance < $1.distance }
        var text = "accessctl: no command '\(word)'"
        if let nearest, nearest.distance <= max(1, word.count / 3) { text += "; did you mean '\(nearest.name)'?" }
        return text + "\n  commands: " + names.joined(separator: ", ") + "\n  See 'accessctl --help'."
    }

    /// Levenshtein distance, over characters (names are short).
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        var previous = Array(0...b.count)
        for (i, ca) in a.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for (j, cb) in b.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (ca == cb ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
