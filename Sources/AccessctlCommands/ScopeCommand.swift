import ArgumentParser
import ControlSocket

extension Readers {
    /// `accessctl readers scope`: the kiosk's reader scope, shown and changed (operator).
    struct ScopeCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "scope",
            abstract: "Which readers this kiosk opens: allow and deny lists, per-reader offsets (operator to change).",
            discussion: """
                Without options: the rules in force, from accessd.toml ([readers], [reader.ID]) or set here. \
                With a reader and options: an operator's rule for it, saved across restarts, which replaces the \
                file's rule for that reader (the options given change the rule in force; the rest is kept). \
                --deny: never connected to, automatically or on request. --allow: automatic access only to \
                readers on the allow list, once any is. --offset: dB added to its path loss (negative opens \
                from further). --automatic off, --manual off: turned off for this reader. A rule never turns \
                on what the reader does not offer. --reset: back to the file's rule.
                """)
        @OptionGroup var options: GlobalOptions
        @Argument(help: "A reader id (as `accessctl readers` prints it).") var reader: String?
        @Flag(help: "Put the reader on the deny list.") var deny = false
        @Flag(help: "Put the reader on the allow list.") var allow = false
        @Flag(help: "Take the reader off the allow or deny list.") var unlist = false
        // Unconditional: a negative offset ("-3") is a value, not an option.
        @Option(
            parsing: .unconditional,
            help: ArgumentHelp("dB added to the reader's path loss (-30 to 30).", valueName: "dB")
        )
        var offset: Double?
        @Flag(help: "Remove the reader's offset.") var noOffset = false
        @Option(
            help: ArgumentHelp(
                "Automatic access to this reader: off, or on (as the reader offers).", valueName: "on|off"))
        var automatic: OnOff?
        @Option(
            help: ArgumentHelp("Manual access to this reader: off, or on (as the reader offers).", valueName: "on|off"))
        var manual: OnOff?
        @Flag(help: "Drop the operator's rule for the reader (every reader's without one): the file's applies.")
        var reset = false

        enum OnOff: String, ExpressibleByArgument, CaseIterable {
            case on, off
        }

        private var changes: Bool {
            deny || allow || unlist || offset != nil || noOffset || automatic != nil || manual != nil
        }

        func validate() throws {
            if [deny, allow, unlist].filter({ $0 }).count > 1 {
                throw ValidationError("give one of --deny, --allow, --unlist")
            }
            if offset != nil && noOffset { throw ValidationError("--offset and --no-offset exclude each other") }
            if reset && changes { throw ValidationError("--reset takes no other change") }
            if changes && reader == nil { throw ValidationError("name the reader to change") }
        }

        func run() throws {
            let connection = try options.connect()
            let answer: ReaderScopeAnswer
            let raw: String
            if reset {
                let result = try options.call(
                    connection, ControlCalls.ReadersResetScope.self,
                    ResetScopeParams(reader: reader))
                (answer, raw) = (result.answer, result.raw.jsonText)
            } else if changes, let reader {
                let current = try options.call(connection, ControlCalls.ReadersGetScope.self).answer
                let canonical = canonicalReader(reader)
                var rule = current.rules.first { $0.reader == canonical } ?? ReaderRuleInfo(reader: canonical)
                rule.reader = canonical
                rule.from = nil
                if deny { rule.list = "deny" }
                if allow { rule.list = "allow" }
                if unlist { rule.list = nil }
                if let offset { rule.pathLossOffset = offset }
                if noOffset { rule.pathLossOffset = nil }
                if let automatic { rule.automatic = automatic == .off ? false : nil }
                if let manual { rule.manual = manual == .off ? false : nil }
                let result = try options.call(connection, ControlCalls.ReadersSetScope.self, rule)
                (answer, raw) = (result.answer, result.raw.jsonText)
            } else {
                let result = try options.call(connection, ControlCalls.ReadersGetScope.self)
                (answer, raw) = (result.answer, result.raw.jsonText)
            }
            if options.json {
                print(raw)
                return
            }
            print(Self.text(answer, only: reader.map(canonicalReader)))
        }

        static func text(_ answer: ReaderScopeAnswer, only reader: String?) -> String {
            let rules = answer.rules.filter { reader == nil || $0.reader == reader }
            if rules.isEmpty {
                return reader.map {
                    "reader \($0): no rule; opened as it offers"
                        + (answer.allowList ? " (but only readers on the allow list open automatically)" : "")
                }
                    ?? "no rules: every reader is opened as it offers"
            }
            var rows = [["READER", "RULE", "FROM"]]
            rows += rules.map { [$0.reader, ScopeText.rule($0), $0.from ?? "-"] }
            let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
            var lines = rows.map { row in
                row.enumerated().map { $0.element.fitted(to: widths[$0.offset]) }
                    .joined(separator: "  ").trailingSpacesRemoved
            }
            if answer.allowList { lines.append("only readers on the allow list open automatically") }
            return lines.joined(separator: "\n")
        }
    }
}
