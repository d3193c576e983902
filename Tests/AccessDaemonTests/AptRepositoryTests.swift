import BlueZTestSupport
import Foundation
import SuiteTraits
import Testing

/// `scripts/repository` (issue #34, item 3) with Debian's real apt, gpg and apt-ftparchive: a
/// kiosk's apt, pointed at the repository with its keyring (its own lists and cache here, so
/// nothing on this machine changes), sees each published version as the candidate; a
/// repository signed by another key, or a published version rebuilt with other contents, is
/// refused. The systemd lab upgrades the installed accessd through the same script
/// (`SystemdLabTests.anUpgradeFromTheSiteRepositoryKeepsCredentialsSettingsAndSequence`).
@Suite("The site's apt repository", .threadOfItsOwn, .timeLimit(.minutes(3)))
struct AptRepositoryTests {
    static let script = LabDemoTests.repository.appendingPathComponent("scripts/repository").path

    /// A directory with a gpg home holding a signing key, a place for the repository, and an
    /// apt that reads only that repository.
    struct Site {
        let directory: String
        let gnupg: String
        let repository: String

        init(directory: String) throws {
            self.directory = directory
            gnupg = directory + "/gnupg"
            repository = directory + "/repo"
            for path in [gnupg, directory + "/apt/lists/partial", directory + "/apt/cache/archives/partial"] {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            }
            chmod(gnupg, 0o700)
            let key = try Self.gpg(
                gnupg,
                [
                    "--passphrase", "", "--quick-gen-key", "Example Site packages <packages@site.example>",
                    "ed25519", "sign", "never",
                ])
            guard key.status == 0 else { throw TestEnvironmentError("gpg: \(key.output)") }
        }

        static func gpg(_ home: String, _ arguments: [String]) throws -> CommandResult {
            try runCommand(
                ["/usr/bin/gpg", "--batch", "--homedir", home] + arguments, mergingErrors: true)
        }

        /// A package of `version` (a few bytes: apt does not care what is inside).
        func package(_ version: String, contents: String = "accessd") throws -> String {
            let root = directory + "/build-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: root + "/DEBIAN", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: root + "/usr/share/doc", withIntermediateDirectories: true)
            try
                "Package: accessd-apt-test\nVersion: \(version)\nArchitecture: all\nMaintainer: t <t@site.example>\nDescription: a test\n"
                .write(toFile: root + "/DEBIAN/control", atomically: true, encoding: .utf8)
            try contents.write(toFile: root + "/usr/share/doc/contents", atomically: true, encoding: .utf8)
            let deb = directory + "/accessd-apt-test-\(version)-\(UUID().uuidString.prefix(4)).deb"
            let built = try runCommand(
                ["/usr/bin/dpkg-deb", "--root-owner-group", "-b", root, deb], mergingErrors: true)
            guard built.status == 0 else { throw TestEnvironmentError("dpkg-deb: \(built.output)") }
            return deb
        }

        func publish(_ debs: [String], key: String = "packages@site.example", gnupg: String? = nil) throws
            -> CommandResult
        {
            try runCommand(
                [
                    "/bin/bash", AptRepositoryTests.script, "--dir", repository, "--key", key,
                    "--gnupg-home", gnupg ?? self.gnupg,
                ] + debs,
                mergingErrors: true)
        }

        /// `apt-get update` and the candidate version, as a kiosk with `keyring` sees them.
        func kioskSees(keyring: String) throws -> (update: CommandResult, candidate: String?) {
            let sources = directory + "/accessd.list"
            try "deb [signed-by=\(keyring)] file:\(repository) ./\n"
                .write(toFile: sources, atomically: true, encoding: .utf8)
            let options = [
                "-o", "Dir::Etc::sourcelist=\(sources)", "-o", "Dir::Etc::sourceparts=-",
                "-o", "Dir::State::Lists=\(directory)/apt/lists", "-o", "Dir::Cache=\(directory)/apt/cache",
                "-o", "Dir::State::status=/dev/null", "-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=root",
            ]
            let update = try runCommand(["/usr/bin/apt-get"] + options + ["update"], mergingErrors: true)
            let policy = try runCommand(["/usr/bin/apt-cache"] + options + ["policy", "accessd-apt-test"])
            let candidate = policy.output.split(separator: "\n")
                .first { $0.contains("Candidate:") }
                .map { $0.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces) }
            return (update, candidate == "(none)" ? nil : candidate)
        }
    }

    private func site() throws -> Site {
        let directory = NSTemporaryDirectory() + "apt-repository-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return try Site(directory: directory)
    }

    @Test func eachPublishedVersionBecomesTheKiosksCandidate() throws {
        let site = try site()
        defer { try? FileManager.default.removeItem(atPath: site.directory) }
        let first = try site.publish([try site.package("1.0")])
        #expect(first.status == 0, "\(first.output)")
        let keyring = site.directory + "/accessd-archive-keyring.gpg"
        try FileManager.default.copyItem(atPath: site.repository + "/accessd-archive-keyring.gpg", toPath: keyring)
        let before = try site.kioskSees(keyring: keyring)
        #expect(before.update.status == 0, "\(before.update.output)")
        #expect(before.candidate == "1.0")

        let second = try site.publish([try site.package("1.1")])
        #expect(second.status == 0 && second.output.contains("2 package(s)"), "\(second.output)")
        #expect(try site.kioskSees(keyring: keyring).candidate == "1.1")
        let release = try String(contentsOfFile: site.repository + "/Release", encoding: .utf8)
        #expect(release.contains("Origin: accessd") && release.contains("Label: accessd"), "\(release)")
    }

    /// A repository someone else signed (a compromised mirror, a wrong key) is not read at
    /// all; a published version rebuilt with other contents is refused by the script.
    @Test func anotherKeysRepositoryAndARepublishedVersionAreRefused() throws {
        let site = try site()
        defer { try? FileManager.default.removeItem(atPath: site.directory) }
        let first = try site.publish([try site.package("1.0")])
        #expect(first.status == 0, "\(first.output)")
        let keyring = site.directory + "/accessd-archive-keyring.gpg"
        try FileManager.default.copyItem(atPath: site.repository + "/accessd-archive-keyring.gpg", toPath: keyring)
        #expect(try site.kioskSees(keyring: keyring).candidate == "1.0")

        let republished = try site.publish([try site.package("1.0", contents: "something else")])
        #expect(republished.status != 0 && republished.output.contains("already published with other contents"))

        let intruder = site.directory + "/intruder"
        try FileManager.default.createDirectory(atPath: intruder, withIntermediateDirectories: true)
        chmod(intruder, 0o700)
        _ = try Site.gpg(
            intruder,
            ["--passphrase", "", "--quick-gen-key", "Intruder <x@intruder.example>", "ed25519", "sign", "never"])
        let forged = try site.publish([try site.package("9.9")], key: "x@intruder.example", gnupg: intruder)
        #expect(forged.status == 0, "\(forged.output)")
        let seen = try site.kioskSees(keyring: keyring)
        #expect(
            seen.update.output.contains("NO_PUBKEY") || seen.update.output.contains("not signed"),
            "\(seen.update.output)")
        #expect(seen.candidate != "9.9")
    }
}
