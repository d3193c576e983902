import FoundationEssentials
import Subprocess
import Synchronization

/// The version of the Debian package accessd runs from, as dpkg records it (`0.1.0`, or
/// `0.1.0+site2` for a site's rebuild of the same sources): what a fleet upgrades and asks
/// about, which the binary's own version does not tell apart. Only for the package's
/// `/usr/sbin/accessd`: a build tree's accessd on a machine that also has the package
/// installed is not that package. Asked once, when first needed (the first `status.get` or
/// MQTT connection), never on the start path; nil when dpkg does not know accessd.
enum InstalledPackage {
    static let executable = "/usr/sbin/accessd"
    private static let asked = Mutex<Task<String?, Never>?>(nil)

    static func version() async -> String? {
        let answer = asked.withLock { asked in
            if let asked { return asked }
            let task = Task { await ask() }
            asked = task
            return task
        }
        return await answer.value
    }

    /// This process's executable, symbolic links resolved.
    static var running: String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    }

    private static func ask() async -> String? {
        guard running == executable, FileManager.default.isExecutableFile(atPath: "/usr/bin/dpkg-query") else {
            return nil
        }
        // A version is short; a dpkg that writes more is not answering this question.
        guard
            let result = try? await run(
                .path("/usr/bin/dpkg-query"), arguments: ["--show", "--showformat=${Version}", "accessd"],
                output: .bytes(limit: 256)),
            result.terminationStatus.isSuccess,
            let text = String(validating: result.standardOutput, as: UTF8.self)?.trimmingWhitespace(),
            !text.isEmpty
        else { return nil }
        return text
    }
}
