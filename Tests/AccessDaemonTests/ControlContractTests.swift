import ControlSocket
import Foundation
import Testing

/// docs/protocol.md says which methods exist and which role each needs, twice (the roles
/// table and each method's heading); the daemon dispatches on `ControlMethod`. They agree.
@Suite("Control contract against docs/protocol.md", .timeLimit(.minutes(5)))
struct ControlContractTests {
    static let documentPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../docs/protocol.md").standardized.path
    static let document: String = (try? String(contentsOfFile: documentPath, encoding: .utf8)) ?? ""

    /// `name` from every `` `name {params}` `` in a piece of text.
    static func methods(in text: Substring) -> [String] {
        text.split(separator: "`", omittingEmptySubsequences: false).enumerated()
            .filter { $0.offset % 2 == 1 }
            .compactMap { $0.element.split(separator: " ").first.map(String.init) }
    }

    @Test func everyMethodHasAHeadingWithItsRole() throws {
        var documented: [String: Role] = [:]
        for line in Self.document.split(separator: "\n") where line.hasPrefix("### `") {
            // A role in parentheses applies to the methods before it since the previous role.
            var pending: [String] = []
            var rest = line.dropFirst(4)
            while !rest.isEmpty {
                if rest.first == "`", let end = rest.dropFirst().firstIndex(of: "`") {
                    pending += Self.methods(in: rest[rest.startIndex...end])
                    rest = rest[rest.index(after: end)...]
                } else if rest.first == "(", let end = rest.firstIndex(of: ")") {
                    let name = rest[rest.index(after: rest.startIndex)..<end]
                    let role = try #require([Role.observer, .operator, .admin].first { $0.description == name })
                    for method in pending { documented[method] = role }
                    pending = []
                    rest = rest[rest.index(after: end)...]
                } else {
                    rest = rest.dropFirst()
                }
            }
            for method in pending { documented[method] = .observer }
        }
        let table = Dictionary(uniqueKeysWithValues: ControlMethod.allCases.map { ($0.rawValue, $0.role) })
        #expect(documented == table)
    }

    @Test func theRolesTableListsEachMethodUnderItsRole() throws {
        var documented: [String: Role] = [:]
        for role in [Role.observer, .operator, .admin] {
            let row = try #require(
                Self.document.split(separator: "\n").first { $0.hasPrefix("| \(role.description) |") })
            let mayCall = row.split(separator: "|").last ?? ""
            for method in Self.methods(in: mayCall) { documented[method] = role }
        }
        let table = Dictionary(uniqueKeysWithValues: ControlMethod.allCases.map { ($0.rawValue, $0.role) })
        #expect(documented == table)
    }

    /// The Events table's first column is exactly the kinds accessd accepts in `kinds`.
    @Test func theEventsTableListsEveryKind() throws {
        let section = try #require(Self.document.components(separatedBy: "## Events\n").dropFirst().first)
        let rows =
            section.components(separatedBy: "\n## ").first?.split(separator: "\n")
            .filter { $0.hasPrefix("| `") } ?? []
        let documented = Set(rows.compactMap { $0.split(separator: "`").dropFirst().first.map(String.init) })
        #expect(documented == Set(EventKind.allCases.map(\.rawValue)))
    }

    /// The Events table's data column names each kind's fields as its type encodes them:
    /// a name without `?` is in every event of the kind, one with `?` only in some, and
    /// nothing else is sent. (`reader.updated` is "a reader, as in `readers.list`".)
    @Test(arguments: EventKind.allCases.filter { $0 != .readerUpdated })
    func theEventsTableNamesEachKindsFields(_ kind: EventKind) throws {
        let row = try #require(Self.document.split(separator: "\n").first { $0.hasPrefix("| `\(kind.rawValue)` |") })
        let column = row.split(separator: "|")[1].trimmingCharacters(in: .whitespaces)
        #expect(column.hasPrefix("`{") && column.hasSuffix("}`"), "\(kind.rawValue): \(column)")
        let names = column.dropFirst(2).dropLast(2).split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        let documentedRequired = Set(names.filter { !$0.hasSuffix("?") })
        let documentedOptional = Set(names.filter { $0.hasSuffix("?") }.map { String($0.dropLast()) })
        func keys(_ data: any ControlEventData) -> Set<String> {
            guard case .object(let members) = data.json else { return [] }
            return Set(members.keys)
        }
        let always = keys(EventSamples.minimal(kind))
        let all = keys(EventSamples.full(kind))
        #expect(documentedRequired == always, "\(kind.rawValue)")
        #expect(documentedOptional == all.subtracting(always), "\(kind.rawValue)")
    }

    /// What accessd encodes, a client decodes to the same value, under the same kind.
    @Test(arguments: EventKind.allCases)
    func everyKindsDataDecodesAsItWasSent(_ kind: EventKind) throws {
        for sample in [EventSamples.full(kind), EventSamples.minimal(kind)] {
            #expect(type(of: sample).kind == kind)
            let decoded = try ControlEvent(kind: kind.rawValue, data: sample.json)
            #expect(decoded == sample.event)
            #expect(decoded.kind == kind)
        }
    }

    /// A client reads an event another kind's type cannot: refused naming the field, never
    /// taken as a different event.
    @Test func dataOfAnotherKindIsRefusedNamingTheField() {
        #expect(throws: RPCError.self) {
            try ControlEvent(kind: EventKind.secondFactorRequired.rawValue, data: EventSamples.full(.sdkState).json)
        }
        #expect(throws: RPCError.self) { try ControlEvent(kind: "sdk.stat", data: .object([:])) }
    }
}
