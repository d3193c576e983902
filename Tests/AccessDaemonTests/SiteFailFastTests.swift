import AccessJSON
import BlueZTestSupport
import Foundation
import SuiteTraits
import Testing

/// Site calls that cannot succeed answer at once and blame only their own site (issue #35,
/// item 3): every call to a site that was down or untrusted took exactly 10.0 s, and a
/// registration refused for a mistyped URL marked the healthy registered site failing.
@Suite("site failures, fast and to the right site", .threadOfItsOwn, .timeLimit(.minutes(5)))
struct SiteFailFastTests {
    /// With a 30 s request timeout (a connect timeout of 10 s): a URL where nothing listens
    /// and a site whose certificate is not trusted are refused in well under that, each
    /// naming its host, and the site accessd holds a credential with stays `ok`. Prints the
    /// times.
    @Test func aRefusedRegistrationIsQuickAndLeavesTheRegisteredSiteOK() async throws {
        let harness = try await DaemonHarness(config: "[site]\nrequest_timeout = 30\nsync_interval = 3600\n")
        let site = try SiteHarness(directory: harness.directory)
        try await site.serve()
        defer { site.stop() }
        try await harness.start()
        let client = try harness.connect()
        _ = try client.call("credentials.register", ["url": .string(try site.invite("Ada").url)]).get()

        // A URL with the port mistyped: nothing listens there.
        let mistyped = try site.invite("Bob").url.replacingOccurrences(of: ":\(site.port)/", with: ":1/")
        var started = ContinuousClock.now
        let refused = try client.call("credentials.register", ["url": .string(mistyped)])
        let refusedAfter = ContinuousClock.now - started
        guard case .failure(let refusal) = refused else {
            Issue.record("a registration to a closed port succeeded")
            return
        }
        #expect(refusal.message.contains("nothing accepts connections at 127.0.0.1:1"), "\(refusal.message)")

        // A site with its own CA, which this kiosk does not trust.
        let pki = try TestPKI(directory: harness.directory + "/pki")
        try FileManager.default.createDirectory(atPath: harness.directory + "/tls", withIntermediateDirectories: true)
        let untrusted = try SiteHarness(directory: harness.directory + "/tls")
        try await untrusted.serve(extra: ["--tls-cert", pki.serverCertificate, "--tls-key", pki.serverKey])
        defer { untrusted.stop() }
        started = ContinuousClock.now
        let distrusted = try client.call("credentials.register", ["url": .string(try untrusted.invite("Eve").url)])
        let distrustedAfter = ContinuousClock.now - started
        guard case .failure(let distrust) = distrusted else {
            Issue.record("a certificate from an unknown CA was accepted")
            return
        }
        #expect(
            distrust.message.contains("the certificate of 127.0.0.1:\(untrusted.port) is not trusted"),
            "\(distrust.message)")
        print("register refused after \(refusedAfter) (closed port), \(distrustedAfter) (untrusted certificate)")
        #expect(refusedAfter < .seconds(5) && distrustedAfter < .seconds(5), "was 10 s each")

        // The registered site is not blamed.
        let status = try client.call("status.get").get()
        #expect(status["featureErrors"]?.array?.contains("cloudConnection") == false, "\(status.jsonText)")
        let diagnose = try runCommand(
            [AccessctlTests.accessctl, "diagnose", "--socket", harness.socketPath], environment: ["LC_ALL": "C.UTF-8"])
        let siteLine = diagnose.output.split(separator: "\n").first { $0.contains("  site  ") }
        #expect(siteLine?.hasPrefix("ok") == true, "\(diagnose.output)")
        #expect(harness.stop() == 0)
    }
}
