import AccessJSON
import BlueZTestSupport
import ControlSocket
import Foundation
import SuiteTraits
import Testing

/// `accessctl diagnose --bundle FILE` (issue #34, item 4) against a real accessd holding
/// every kind of secret it keeps: the bundle has what support needs and none of them.
@Suite("diagnostics bundle", .threadOfItsOwn, .timeLimit(.minutes(5)))
struct DiagnosticsBundleTests {
    /// A running accessd holding a credential with a PIN and a broker's password, and every
    /// secret it holds (what no bundle may carry).
    struct Planted {
        var harness: DaemonHarness
        var site: SiteHarness
        var fingerprint: String
        var secrets: [String]
    }

    static func kioskWithSecrets() async throws -> Planted {
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
            [metrics]
            listen = "\(harness.directory)/metrics.sock"
            """)
        let site = try SiteHarness(directory: harness.directory)
        try await site.serve()
        try await harness.start()
        let pin = "493817"
        let invitation = try site.invite("Ada", secondFactor: true)
        let registered = try harness.connect().call(
            "credentials.register", ["url": .string(invitation.url), "pin": .string(pin)]
        ).get()
        let fingerprint = try #require(registered["fingerprint"]?.string)
        // The broker's password (file and comment), the PIN, the invitation's code, the data
        // key that seals the credential's keys.
        let dataKey = try Data(contentsOf: URL(fileURLWithPath: harness.stateDirectory + ".key"))
        var planted = [password, pin, invitation.code, invitation.code.replacingOccurrences(of: "-", with: "")]
        planted += [dataKey.base64EncodedString(), dataKey.map { String(format: "%02x", $0) }.joined()]
        return Planted(harness: harness, site: site, fingerprint: fingerprint, secrets: planted.filter { !$0.isEmpty })
    }

    /// What support needs, and none of the planted secrets.
    static func expectWhatSupportNeeds(_ bundle: JSONValue, text: String, _ planted: Planted) {
        #expect(bundle["bundle"] == 1)
        #expect(bundle["diagnose"]?.array?.contains { $0["check"] == "socket" && $0["ok"] == true } == true)
        #expect(bundle["status"]?["version"]?.string != nil, "\(text.prefix(2000))")
        #expect(bundle["credentials"]?["credentials"]?.array?.first?["fingerprint"]?.string == planted.fingerprint)
        #expect(bundle["events"]?.array?.contains { $0["kind"] == "credentials.changed" } == true)
        let settings = bundle["configuration"]?["settings"]?.array?.compactMap(\.string) ?? []
        #expect(settings.contains("username = \"kiosk\""), "\(settings)")
        #expect(bundle["system"]?["kernel"]?.string != nil)
        // accessd's own metrics, from its [metrics] endpoint, without help, types or buckets.
        let samples = bundle["metrics"]?.array?.compactMap(\.string) ?? []
        #expect(samples.contains { $0.hasPrefix("accessd_build_info{version=") }, "\(bundle["metrics"] ?? .null)")
        #expect(samples.contains { $0.hasPrefix("accessd_credentials ") })
        #expect(!samples.contains { $0.hasPrefix("#") || $0.contains("_bucket{") })
        for secret in planted.secrets {
            #expect(!text.lowercased().contains(secret.lowercased()), "the bundle carries \(secret)")
        }
    }

    @Test func theBundleHoldsWhatSupportNeedsAndNoSecret() async throws {
        let planted = try await Self.kioskWithSecrets()
        let harness = planted.harness
        defer { planted.site.stop() }
        defer { _ = harness.stop() }

        let path = harness.directory + "/bundle.json"
        let run = try runCommand(
            [AccessctlTests.accessctl, "diagnose", "--bundle", path, "--socket", harness.socketPath],
            environment: ["LC_ALL": "C.UTF-8"])
        #expect(run.errors.contains("accessctl: diagnostics bundle written to \(path)"), "\(run.errors)")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let bundle = try JSONValue.parse(text)
        Self.expectWhatSupportNeeds(bundle, text: text, planted)
        if case .object(let members) = bundle {
            print("bundle: \(text.utf8.count) bytes: \(members.keys.sorted().joined(separator: ", "))")
            for key in ["configuration", "system"] { print("\(key): \(members[key]?.jsonText ?? "")") }
            print("events[0]: \(bundle["events"]?.array?.first?.jsonText ?? "")")
            let samples = bundle["metrics"]?.array ?? []
            print(
                "metrics: \(samples.count) samples, from \(samples.prefix(3).map(\.jsonText).joined(separator: ", "))")
        }
    }

    /// `diagnostics.collect`: accessd gathers the same bundle (running the accessctl beside it,
    /// as an administrator), for a caller not at the kiosk; a second call while one runs is busy.
    @Test func accessdGathersTheSameBundleForACallerElsewhere() async throws {
        let planted = try await Self.kioskWithSecrets()
        let harness = planted.harness
        defer { planted.site.stop() }
        defer { _ = harness.stop() }

        // Two calls at once: whichever comes second while the first runs is busy (under load
        // either may come first: CI saw the later-started one win).
        let calls = (0..<2).map { _ in Task.detached { try harness.connect().call("diagnostics.collect") } }
        var answers: [Result<JSONValue, RPCError>] = []
        for call in calls { answers.append(try await call.value) }
        let bundles = answers.compactMap { try? $0.get() }
        let bundle = try #require(bundles.first, "\(answers)")
        let text = bundle.jsonText
        Self.expectWhatSupportNeeds(bundle, text: text, planted)
        #expect(text.utf8.count <= 65_536)
        for case .failure(let error) in answers {
            #expect(error.data?["error"] == "diagnostics.busy", "\(error)")
        }
        print(
            "diagnostics.collect: \(text.utf8.count) bytes; the two calls: \(answers.map { (try? $0.get()) == nil ? "busy" : "bundle" })"
        )

        // A limit too small for the bundle's core is a usage error.
        let tooSmall = try runCommand(
            [AccessctlTests.accessctl, "diagnose", "--bundle", "-", "--bundle-limit", "1000"],
            environment: ["ACCESSD_SOCKET": harness.socketPath])
        #expect(tooSmall.status == 64, "\(tooSmall.errors)")
        #expect(tooSmall.errors.contains("--bundle-limit is at least 16384 bytes"), "\(tooSmall.errors)")
    }

    /// `--bundle-limit`: the oldest events are left out, as few as will do, and counted.
    @Test func aBundleLimitLeavesOutTheOldestEvents() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        defer { _ = harness.stop() }
        let connection = try harness.connect()
        // Events enough to pass the limit: an operator's scope changes, each one event.
        for round in 0..<150 {
            _ = try connection.call(
                "readers.setScope", ["reader": "2A01", "pathLossOffset": .int(Int64(round % 10))]
            ).get()
        }
        let last = try #require(try connection.call("status.get").get()["lastSequence"]?.int)
        let limit = 16_384
        let run = try runCommand(
            [
                AccessctlTests.accessctl, "diagnose", "--bundle", "-", "--bundle-limit", "\(limit)", "--socket",
                harness.socketPath,
            ])
        #expect(run.status == 0, "\(run.errors)")
        let bundle = try JSONValue.parse(run.output)
        let events = bundle["events"]?.array ?? []
        let leftOut = bundle["leftOut"]?["events"]?.int ?? 0
        print("bundle: \(run.output.utf8.count) bytes, \(events.count) events kept, \(leftOut) left out")
        #expect(run.output.utf8.count <= limit)
        #expect(leftOut > 0 && !events.isEmpty)
        #expect(events.last?["seq"]?.int == last, "the newest event is kept")
        // As few left out as will do: one more event would not fit.
        #expect(run.output.utf8.count + (events.first?.jsonText.utf8.count ?? 0) > limit - 200)
    }
}
