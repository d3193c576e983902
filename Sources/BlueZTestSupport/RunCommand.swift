import Foundation

/// What a command run to its end printed, and how it ended.
public struct CommandResult: Sendable {
    /// The exit status; 128 + the signal when a signal ended it.
    public var status: Int32
    public var output: String
    /// Standard error; empty when it was merged into `output`.
    public var errors: String
}

/// Runs `arguments` (the first a full path) to its end, with `input` on its standard input,
/// through files rather than pipes (`ChildProcess` says why). Blocks its thread: call it from
/// a test on a thread of its own. Throws when it cannot start or runs longer than `timeout`.
public func runCommand(
    _ arguments: [String], input: String? = nil, mergingErrors: Bool = false,
    environment: [String: String] = [:], timeout: Duration = .seconds(120)
) throws -> CommandResult {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "accessd-command-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let inputPath = directory.appendingPathComponent("in").path
    let outputPath = directory.appendingPathComponent("out").path
    let errorsPath = directory.appendingPathComponent("err").path
    if let input { try input.write(toFile: inputPath, atomically: false, encoding: .utf8) }
    let child = try ChildProcess(
        arguments, environment: environment, input: input == nil ? nil : inputPath,
        output: outputPath, errors: mergingErrors ? nil : errorsPath)
    guard let status = child.waitForExit(timeout: timeout) else {
        throw TestEnvironmentError("\(arguments.joined(separator: " ")) ran longer than \(timeout)")
    }
    func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
    return CommandResult(status: status, output: read(outputPath), errors: read(errorsPath))
}
