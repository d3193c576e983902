import BlueZTestSupport
import Foundation

/// The first line of the file at `path`, past its first `after` lines, that contains `text`,
/// as soon as it is there (a follow mode or a live view writing into a file); throws after
/// `readinessCeiling` with what the file holds.
func waitForLine(in path: String, containing text: String, after: Int = 0) async throws -> String {
    let deadline = ContinuousClock.now + readinessCeiling
    while ContinuousClock.now < deadline {
        let content = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        if let line = content.split(whereSeparator: \.isNewline).dropFirst(after).first(where: { $0.contains(text) }) {
            return String(line)
        }
        try await Task.sleep(for: .milliseconds(20))
    }
    throw TestEnvironmentError(
        "no line with \(text) in \(path) within \(readinessCeiling): \((try? String(contentsOfFile: path, encoding: .utf8)) ?? "")"
    )
}

/// How many lines the file at `path` has now (for `waitForLine(after:)`). A pty ends lines
/// with "\r\n", one `Character` in Swift, so lines are split at any newline.
func lineCount(_ path: String) -> Int {
    ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(whereSeparator: \.isNewline).count
}
