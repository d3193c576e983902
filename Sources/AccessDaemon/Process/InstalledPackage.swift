import Foundation

/// The version of the Debian package accessd runs from, as dpkg records it (`0.1.0`, or
/// `0.1.0+site2` for a site's rebuild of the same sources): what a fleet upgrades and asks
/// about, which the binary's own version does not tell apart. Only for the package's
/// `/usr/sbin/accessd`: a build tree's accessd on a machine that also has the package
/// installed is not that package. Asked once, when first needed (the first `status.get` or
/// MQTT connection), never on the start path; nil when dpkg does not know accessd.
enum InstalledPackage {
    static let executable = "/usr/sbin/accessd"

    static let version: String? = {
        guard Bundle.main.executableURL?.resolvingSymlinksInPath().path == executable,
            FileManager.default.isExecutableFile(atPath: "/usr/bin/dpkg-query")
        else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dpkg-query")
        process.arguments = ["--show", "--showformat=${Version}", "accessd"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        // A version is short; a dpkg that writes more is not answering this question.
        let data = (try? output.fileHandleForReading.read(upToCount: 256)) ?? nil
        process.waitUntilExit()
        guard process.terminationStatus == 0, let data,
            let text = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines),
            !text.isEmpty, text.utf8.count < 256
        else { return nil }
        return text
    }()
}
