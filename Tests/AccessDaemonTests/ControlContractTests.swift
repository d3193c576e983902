import ControlSocket
import Foundation
import Testing

/// docs/protocol.md says which methods exist and which role each needs, twice (the roles
/// table and each method's heading); the daemon dispatches on `ControlMethod`. They agree.
@Suite("Control contract against docs/protocol.md")
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
            let row = try #require(Self.document.split(separator: "\n").first { $0.hasPrefix("| \(role.description) |") })
            let mayCall = row.split(separator: "|").last ?? ""
            for method in Self.methods(in: mayCall) { documented[method] = role }
        }
        let table = Dictionary(uniqueKeysWithValues: ControlMethod.allCases.map { ($0.rawValue, $0.role) })
        #expect(documented == table)
    }

    /// The Events table's first column is exactly the kinds accessd accepts in `kinds`.
    @Test func theEventsTableListsEveryKind() throws {
        let section = try #require(Self.document.components(separatedBy: "## Events\n").dropFirst().first)
        let rows = section.components(separatedBy: "\n## ").first?.split(separator: "\n")
            .filter { $0.hasPrefix("| `") } ?? []
        let documented = Set(rows.compactMap { $0.split(separator: "`").dropFirst().first.map(String.init) })
        #expect(documented == Set(EventKind.allCases.map(\.rawValue)))
    }
}
