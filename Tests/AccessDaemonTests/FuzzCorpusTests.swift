import AccessFuzzing
import Foundation
import Testing

/// Every seed and every regression in Tests/FuzzCorpus, replayed through its harness on each
/// test run (scripts/fuzz grows the corpus; a finding is copied here once fixed). A broken
/// property traps, which fails the suite.
@Suite("Fuzz corpus", .timeLimit(.minutes(5)))
struct FuzzCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("FuzzCorpus")

    @Test(arguments: FuzzHarness.allCases)
    func everyInputHolds(_ harness: FuzzHarness) throws {
        let directory = Self.corpus.appendingPathComponent(harness.rawValue)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(!files.isEmpty, "every harness has seeds")
        for file in files {
            harness.run(Array(try Data(contentsOf: directory.appendingPathComponent(file))))
        }
    }

    /// scripts/fuzz names the harnesses it runs: every one of them (mqtt-command was missing).
    @Test func scriptsFuzzRunsEveryHarness() throws {
        let script = try String(
            contentsOf: Self.corpus.deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("scripts/fuzz"), encoding: .utf8)
        let line = script.split(separator: "\n").first { $0.hasPrefix("harnesses=(") } ?? ""
        let listed = Set(line.dropFirst("harnesses=(".count).dropLast().split(separator: " ").map(String.init))
        #expect(listed == Set(FuzzHarness.allCases.map(\.rawValue)), "\(line)")
    }
}
