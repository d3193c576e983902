import AccessJSON
import BlueZTestSupport
import Foundation
import SuiteTraits
import Testing

/// `accessctl diagnose --bundle FILE` (issue #34, item 4) against a real accessd holding
/// every kind of secret it keeps: the bundle has what support needs and none of them.
@Suite("diagnostics bundle", .threadOfItsOwn, .timeLimit(.minutes(5)))
struct DiagnosticsBundleTests {
    @Test func theBundleHoldsWhatSupportNeedsAndNoSecret() async throws {
        let harness = try await DaemonHarness()
        let password = "planted-broker-password-7731"
        let passwordFile = harness.directory + "/mqtt.password"
        try Data("\(password)\n".utf8).write(to: URL(fileURLWithPath: passwordFile))
        try harness.writeConfig(
            """
            # the broker's password is \(password) (a comment that must not travel)
            [mqtt]
            url = "mqtt://127.0.0.1:1"
            username = "kiosk"
            password_file = "\(passwordFile)"
            """)
        let site = try SiteHarness(directory: harness.directory)
        try await site.serve()
        defer { site.stop() }
        try await harness.start()
        defer { _ = harness.stop() }
        let pin = "493817"
        let invitation = try site.invite("Ada", secondFactor: true)
        let registered = try harness.connect().call(
            "credentials.register", ["url": .string(invitation.url), "pin": .string(pin)]
        ).get()
        let fingerprint = try #require(registered["fingerprint"]?.string)

        let path = harness.directory + "/bundle.json"
        let run = try runCommand(
            [AccessctlTests.accessctl, "diagnose", "--bundle", path, "--socket", harness.socketPath],
            environment: ["LC_ALL": "C.UTF-8"])
        #expect(run.errors.contains("accessctl: diagnostics bundle written to \(path)"), "\(run.errors)")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let bundle = try JSONValue.parse(text)

        // What support needs.
        #expect(bundle["bundle"] == 1)
        #expect(bundle["diagnose"]?.array?.contains { $0["check"] == "socket" && $0["ok"] == true } == true)
        #expect(bundle["status"]?["version"]?.string != nil, "\(text.prefix(2000))")
        #expect(bundle["credentials"]?["credentials"]?.array?.first?["fingerprint"]?.string == fingerprint)
        #expect(bundle["events"]?.array?.contains { $0["kind"] == "credentials.changed" } == true)
        let settings = bundle["configuration"]?["settings"]?.array?.compactMap(\.string) ?? []
        #expect(settings.contains("username = \"kiosk\""), "\(settings)")
        #expect(bundle["system"]?["kernel"]?.string != nil)

        // No secret: the broker's password (file and comment), the PIN, the invitation's code,
        // the data key that seals the credential's keys.
        let dataKey = try Data(contentsOf: URL(fileURLWithPath: harness.stateDirectory + ".key"))
        var planted = [password, pin, invitation.code, invitation.code.replacingOccurrences(of: "-", with: "")]
        planted += [dataKey.base64EncodedString(), dataKey.map { String(format: "%02x", $0) }.joined()]
        for secret in planted where !secret.isEmpty {
            #expect(!text.lowercased().contains(secret.lowercased()), "the bundle carries \(secret)")
        }
        if case .object(let members) = bundle {
            print("bundle: \(text.utf8.count) bytes: \(members.keys.sorted().joined(separator: ", "))")
            for key in ["configuration", "system"] { print("\(key): \(members[key]?.jsonText ?? "")") }
            print("events[0]: \(bundle["events"]?.array?.first?.jsonText ?? "")")
        }
    }
}
