import AccessJSON
import BlueZTestSupport
import ControlSocket
import Foundation
import SuiteTraits
import Testing

/// `[site] pins` (issue #32, item 5) with two local CAs, both trusted by the kiosk (`ca_file`
/// holds both): the site's own certificate, whose key is pinned, registers; a certificate for
/// the same address from the other CA (the "any CA the kiosk trusts" impersonation) is refused
/// before the request is sent, naming the key it presented and the pinned one. Real accessd
/// processes, real `readersim site` servers over TLS.
@Suite("site pinning", .threadOfItsOwn, .timeLimit(.minutes(5)))
struct SitePinningTests {
    /// The pin of a certificate's key as docs/configuration.md has an operator compute it.
    static func pin(of certificate: String) throws -> String {
        let result = try runCommand([
            "/bin/sh", "-c",
            "openssl x509 -in '\(certificate)' -pubkey -noout | openssl pkey -pubin -outform der"
                + " | openssl dgst -sha256 -binary | base64",
        ])
        guard result.status == 0 else { throw TestEnvironmentError("openssl: \(result.errors)") }
        return "sha256//" + result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func onlyThePinnedKeyIsTakenFromAnyTrustedCA() async throws {
        let harness = try await DaemonHarness()
        let site = try TestPKI(directory: harness.directory + "/site-pki")
        let other = try TestPKI(directory: harness.directory + "/other-pki")
        let trusted = harness.directory + "/trusted.pem"
        try
            (String(contentsOfFile: site.caCertificate, encoding: .utf8)
            + String(contentsOfFile: other.caCertificate, encoding: .utf8))
            .write(toFile: trusted, atomically: true, encoding: .utf8)
        let pinned = try Self.pin(of: site.serverCertificate)
        let impostorKey = try Self.pin(of: other.serverCertificate)
        #expect(pinned != impostorKey)

        for name in ["real", "impostor"] {
            try FileManager.default.createDirectory(
                atPath: harness.directory + "/" + name, withIntermediateDirectories: true)
        }
        let real = try SiteHarness(directory: harness.directory + "/real")
        try await real.serve(extra: ["--tls-cert", site.serverCertificate, "--tls-key", site.serverKey])
        defer { real.stop() }
        let impostor = try SiteHarness(directory: harness.directory + "/impostor")
        try await impostor.serve(extra: ["--tls-cert", other.serverCertificate, "--tls-key", other.serverKey])
        defer { impostor.stop() }

        try harness.writeConfig(
            "[site]\nca_file = \"\(trusted)\"\npins = [\"\(pinned)\"]\nrequest_timeout = 5\n")
        try await harness.start()
        defer { _ = harness.stop() }
        let client = try harness.connect()
        let registered = try client.call("credentials.register", ["url": .string(try real.invite("Ada").url)])
        #expect(try registered.get()["cardholderName"] == "Ada")

        // Trusted through the other CA, but not the pinned key: refused, and the site never
        // saw the request.
        let before = impostor.requests.count
        let refused = try client.call("credentials.register", ["url": .string(try impostor.invite("Mallory").url)])
        guard case .failure(let error) = refused else {
            Issue.record("a site with a key that is not pinned was accepted")
            return
        }
        #expect(error.data?["error"] == "site.keyNotPinned", "\(error)")
        #expect(error.message.contains("presented the key \(impostorKey), which is not pinned"), "\(error.message)")
        #expect(error.message.contains("[site] pins: \(pinned))"), "\(error.message)")
        #expect(impostor.requests.count == before, "\(impostor.requests)")
        #expect(try client.call("credentials.list").get()["credentials"]?.array?.count == 1)
        print(error.message)
    }
}
