import AccessJSON
import ArgumentParser
import ControlSocket

#if canImport(Glibc)
    import Glibc
#endif

struct Readers: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Readers accessd hears, with range and distance; which it may open (scope).",
        subcommands: [List.self, ScopeCommand.self], defaultSubcommand: List.self)
}

extension Readers {
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Readers accessd hears, with range and distance (the default).",
            discussion: """
                With --watch on a terminal: a live view (scanning, adapter, clock; per reader its path loss \
                against its auto and manual thresholds, range, distance, last heard; the last accesses), \
                redrawn as readers move and every second. Into a pipe or a file each change prints the \
                table again after a blank line, without terminal codes. A restart of accessd is waited out.
                """)
        @OptionGroup var options: GlobalOptions
        @Flag(help: "Keep the table current until interrupted.") var watch = false
        @Flag(help: "With --watch: if accessd is not running yet, wait for it.") var wait = false
        @Option(
            name: [.customShort("f"), .long],
            help: ArgumentHelp(
                "Columns, comma-separated, or all.",
                discussion:
                    "Columns: \(ReaderColumn.allCases.map(\.rawValue).joined(separator: ", ")). "
                    + "Default: \(ReaderColumn.defaults.map(\.rawValue).joined(separator: ",")).",
                valueName: "columns")) var fields: String?

        func validate() throws {
            if wait && !watch { throw ValidationError("--wait goes with --watch") }
            if let fields, case .failure(let failure) = ReaderColumn.parse(fields) {
                throw ValidationError(failure.message)
            }
        }

        private var columns: [ReaderColumn] {
            guard let fields, case .success(let columns) = ReaderColumn.parse(fields) else {
                return ReaderColumn.defaults
            }
            return columns
        }

        func run() throws {
            let connection = try options.connect(waiting: wait)
            let (answer, raw) = try options.call(connection, ControlCalls.ReadersList.self)
            guard watch else {
                if options.json {
                    for reader in raw["readers"]?.array ?? [] { print(reader.jsonText) }
                } else {
                    print(ReaderTable.text(answer.readers, columns: columns))
                }
                return
            }
            if isatty(1) == 1 && !options.json {
                try LiveView(options: options).run(connection, readers: answer.readers)
                return
            }
            var following = try Following(
                options: options, connection: connection,
                kinds: [EventKind.readerUpdated.rawValue, EventKind.readerUnavailable.rawValue], since: nil)
            // The table, shared with the reconnect hook (which lists the readers afresh).
            final class Table { var readers: [String: ReaderInfo] = [:] }
            let current = Table()
            current.readers = ReaderTable.byID(answer.readers)
            if options.json {
                // One shape for the whole stream: a snapshot first, then each change.
                printLine(JSONValue.object(["snapshot": raw["readers"] ?? .array([])]).jsonText)
            } else {
                printLine("\n" + ReaderTable.text(Array(current.readers.values), columns: self.columns))
            }
            following.reconnected = { fresh in
                let listed = try? self.options.call(fresh, ControlCalls.ReadersList.self)
                current.readers = listed.map { ReaderTable.byID($0.answer.readers) } ?? [:]
                if self.options.json {
                    printLine(JSONValue.object(["snapshot": listed?.raw["readers"] ?? .array([])]).jsonText)
                } else {
                    printLine("\n" + ReaderTable.text(Array(current.readers.values), columns: self.columns))
                }
            }
            while true {
                let notification = try following.next()
                guard let params = notification["params"], params["data"]?["id"] != nil else { continue }
                if options.json {
                    printLine(params.jsonText)
                    continue
                }
                // The same bookkeeping as the live view's.
                var screen = LiveView.Screen(readers: current.readers)
                screen.apply(notification)
                current.readers = screen.readers
                printLine("\n" + ReaderTable.text(Array(current.readers.values), columns: self.columns))
            }
        }
    }
}

/// One column of `accessctl readers` (`--fields`, as nmcli's `-f`): the defaults fit 80
/// columns for readers with names of a dozen characters (issue #35: all eleven made 121).
enum ReaderColumn: String, CaseIterable {
    case id, name, kind, rssi
    case pathLoss = "path-loss"
    case thresholds, range, distance, heard, flags, scope

    static let defaults: [ReaderColumn] = [.id, .name, .pathLoss, .range, .distance, .heard, .scope]

    /// `id,range,heard` (any case) or `all`; a failure names the first word that is not a column.
    static func parse(_ text: String) -> Result<[ReaderColumn], ValidationFailure> {
        if text.lowercased() == "all" { return .success(allCases) }
        var columns: [ReaderColumn] = []
        for word in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = word.trimmingWhitespace().lowercased()
            guard let column = ReaderColumn(rawValue: name) else { return .failure(ValidationFailure(word: name)) }
            columns.append(column)
        }
        return .success(columns)
    }

    struct ValidationFailure: Error {
        let word: String
        var message: String {
            "--fields: no column '\(word)' (columns: \(ReaderColumn.allCases.map(\.rawValue).joined(separator: ",")), or all)"
        }
    }

    var header: String {
        switch self {
        case .pathLoss: "PATH LOSS"
        case .thresholds: "AUTO/MANUAL"
        default: rawValue.uppercased()
        }
    }

    func value(_ r: ReaderInfo) -> String {
        switch self {
        case .id: r.id
        case .name: r.name ?? "-"
        case .kind: r.kind
        case .rssi: "\(r.rssi) dBm"
        case .pathLoss: ReaderTable.pathLoss(r.measuredPathLoss)
        case .thresholds: "\(r.autoConnectPathLoss)/\(r.manualConnectPathLoss) dB"
        case .range: ReaderTable.range(r)
        case .distance: r.distance
        case .heard: r.heardSecondsAgo.map { "\(ReaderTable.decimal($0)) s ago" } ?? "-"
        case .flags: ReaderTable.flags(r)
        case .scope: ScopeText.effective(r.scope)
        }
    }
}

/// The readers as a plain table: no terminal codes, for files, pipes and `readers` alone.
enum ReaderTable {
    static func byID(_ readers: [ReaderInfo]) -> [String: ReaderInfo] {
        Dictionary(readers.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
    }

    static func text(_ readers: [ReaderInfo], columns: [ReaderColumn] = ReaderColumn.defaults) -> String {
        var rows = [columns.map(\.header)]
        for reader in readers.sorted(by: { $0.id < $1.id }) { rows.append(columns.map { $0.value(reader) }) }
        let widths = columns.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        var lines = rows.map { row in
            row.enumerated().map { $0.element.fitted(to: widths[$0.offset]) }
                .joined(separator: "  ").trailingSpacesRemoved
        }
        if readers.isEmpty { lines.append("(no readers heard)") }
        return lines.joined(separator: "\n")
    }

    /// In range as the SDK means it: auto (it would open on its own), manual (an access may be
    /// asked for), or out.
    static func range(_ r: ReaderInfo) -> String {
        if r.isInAutoConnectRange { return "auto" }
        return r.measuredPathLoss <= Double(r.manualConnectPathLoss) ? "manual" : "out"
    }

    static func flags(_ r: ReaderInfo) -> String {
        let names = [
            (r.isBleAutoConnectEnabled, "auto"), (r.isBleManualConnectEnabled, "manual"),
            (r.isSecondFactorRequired, "pin"), (r.isBleActionsEnabled, "actions"),
        ]
        let set = names.filter(\.0).map(\.1)
        return set.isEmpty ? "-" : set.joined(separator: ",")
    }

    /// One decimal always: `16.0 dB`, never `16` beside `18.1`.
    static func pathLoss(_ value: Double) -> String { "\(decimal(value)) dB" }

    static func decimal(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        let sign = tenths < 0 ? "-" : ""
        return "\(sign)\(abs(tenths) / 10).\(abs(tenths) % 10)"
    }
}

extension String {
    var trailingSpacesRemoved: String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
