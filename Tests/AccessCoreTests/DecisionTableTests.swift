import Foundation
import Testing

@testable import AccessCore

/// docs/reader-protocol.md §6's decision table is the whole of `AccessDecision`, with each
/// code's byte and whether it opens (issue #14: a reader written from the document had to find
/// −2 … −16 by sending every value to accessd).
@Suite("Decision table in the reader protocol", .timeLimit(.minutes(5)))
struct DecisionTableTests {
    @Test func theTableListsEveryCodeAndWhatItMeans() throws {
        let url = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/reader-protocol.md")
        let text = try String(contentsOf: url, encoding: .utf8)
        var documented: [Int8: (name: String, granted: Bool)] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| ") && line.contains(" (`0x") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 3, let code = Int8(cells[0].split(separator: " ").first ?? ""),
                let byte = UInt8(cells[0].split(separator: "x").last?.prefix(2) ?? "", radix: 16)
            else { continue }
            #expect(UInt8(bitPattern: code) == byte, "\(line)")
            documented[code] = (
                cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`")), cells[2].hasPrefix("granted")
            )
        }
        #expect(documented.count == AccessDecision.allCases.count)
        for decision in AccessDecision.allCases {
            #expect(documented[decision.rawValue]?.name == decision.description, "\(decision)")
            #expect(documented[decision.rawValue]?.granted == decision.isGranted, "\(decision)")
        }
    }
}
