import AccessCore
import ArgumentParser
import ControlSocket

#if canImport(Glibc)
    import Glibc
#endif

/// Shell completions of live objects, asked of accessd while the person types (as
/// `systemctl` completes unit names): reader ids heard now, credential ids, open prompts. The
/// socket is the one the command line names (`--socket`), else $ACCESSD_SOCKET, else the
/// default; accessd gets half a second. When it is not running, or refuses the role, nothing
/// is offered for those (the shell then falls back to no completion), while event kinds and log
/// levels, which are fixed, are always completed.
enum LiveCompletions {
    static let readers = CompletionKind.custom { words, _, prefix in
        ask(words, ControlCalls.ReadersList.self) { answer in
            // The short form people type (2A01), as the docs and the readers table show it.
            answer.readers.compactMap { ReaderID($0.id).map { String($0.rawValue, radix: 16, uppercase: true) } }
        }.filter { $0.hasPrefix(prefix.uppercased()) }
    }

    static let credentials = CompletionKind.custom { words, _, prefix in
        ask(words, ControlCalls.CredentialsList.self) { $0.credentials.map(\.id) }.filter { $0.hasPrefix(prefix) }
    }

    static let prompts = CompletionKind.custom { words, _, prefix in
        ask(words, ControlCalls.SecondFactorList.self) { $0.prompts.map(\.request) }.filter { $0.hasPrefix(prefix) }
    }

    /// `--kinds a,b,`: completes the last kind of the comma-separated list.
    static let eventKinds = CompletionKind.custom { _, _, prefix in
        let done = prefix.split(separator: ",", omittingEmptySubsequences: false).dropLast().joined(separator: ",")
        let head = done.isEmpty ? "" : done + ","
        return EventKind.allCases.map { head + $0.rawValue }.filter { $0.hasPrefix(prefix) }
    }

    static let logLevels = CompletionKind.list(["trace", "debug", "info", "notice", "warning", "error", "critical"])

    /// One call to accessd with a short deadline; nothing when it does not answer.
    private static func ask<Call: ControlCall>(
        _ words: [String], _ call: Call.Type,
        _ pick: (Call.Answer) -> [String]
    ) -> [String]
    where Call.Params == NoParams {
        guard let connection = try? ControlConnection(path: socket(in: words)) else { return [] }
        connection.answerTimeout = .milliseconds(500)
        guard case .success(let value)? = try? connection.call(Call.method),
            let answer = try? value.decode(Call.Answer.self)
        else { return [] }
        return pick(answer)
    }

    private static func socket(in words: [String]) -> String {
        for (index, word) in words.enumerated() {
            if word == "--socket", index + 1 < words.count { return words[index + 1] }
            if word.hasPrefix("--socket=") { return String(word.dropFirst("--socket=".count)) }
        }
        return getenv("ACCESSD_SOCKET").map { String(cString: $0) } ?? "/run/accessd/accessd.sock"
    }
}
