import AccessCore
import AccessJSON
import BlueZTestSupport
import ControlSocket
import Crypto
import Foundation
import Testing

@testable import AccessStore

/// Issue #32 through the real accessd and its socket: without systemd its secrets are sealed
/// with a key file beside the state directory, and said to be not sealed to the machine; a
/// state directory whose data key is another one runs, and its credential is keyUnavailable
/// everywhere an operator looks, never presented.
@Suite("Sealed state, the real daemon", .timeLimit(.minutes(5)))
struct SealedStateDaemonTests {
    @Test func aStateDirectorySealedWithAnotherKeyRunsAndSaysItsKeyIsUnavailable() async throws {
        let harness = try await DaemonHarness()
        // The state directory from another kiosk: sealed with its data key, not this one.
        do {
            let elsewhere = try AccessStore(
                directory: harness.stateDirectory, dataKey: .success(.random(protection: .host, origin: "other")))
            try elsewhere.insertCredential(
                StoredCredential(
                    credential: Credential(
                        id: CredentialID(bytes: Array(repeating: 0x0d, count: 16))!, siteTag: SiteTag(0x2A),
                        cardholderName: "Ada", kind: .mobile, state: .active,
                        sitePublicKey: P256.Signing.PrivateKey().publicKey, signingKey: P256.Signing.PrivateKey()),
                    siteName: "Site", siteURL: "https://site.invalid", deviceName: "kiosk",
                    registeredAt: Date().timeIntervalSince1970, lastSyncAt: Date().timeIntervalSince1970))
        }
        try await harness.start()
        defer { _ = harness.stop() }
        let status = try harness.connect().call("status.get").get()
        #expect(status["secrets"]?["protection"] == "keyFile", "\(status)")
        #expect(status["secrets"]?["sealedToMachine"] == false)
        #expect(status["secrets"]?["keyOrigin"]?.string == harness.stateDirectory + ".key")
        #expect(status["secrets"]?["problem"]?.string?.contains("another data key") == true, "\(status)")
        #expect(status["secrets"]?["keyUnavailable"] == 1)
        #expect(status["states"]?.array?.contains("errorCredentialKeyUnavailable") == true)
        #expect(status["usableCredentialCount"] == 0 && status["credentialCount"] == 1)
        let credential = try #require(try harness.connect().call("credentials.list").get()["credentials"]?.array?.first)
        #expect(credential["state"] == "keyUnavailable", "\(credential)")
        #expect(credential["keyProblem"]?.string?.hasPrefix("sealed with another data key") == true)
        #expect(credential["fingerprint"] == nil)
        #expect(harness.log.contains("credential key unavailable"), "\(harness.log)")
        // The key file: outside the state directory, the owner's alone.
        var info = stat()
        #expect(stat(harness.stateDirectory + ".key", &info) == 0 && info.st_mode & 0o777 == 0o600)
        // Its site is not asked: a key that does not open cannot sign, and the failure would
        // read as the site's (the lab saw "the site's answer is not the site API").
        try await Task.sleep(for: .seconds(2))
        #expect(!harness.log.contains("site sync failed"), "\(harness.log)")
        #expect(try harness.connect().call("status.get").get()["featureErrors"]?.array?.isEmpty == true)
        // What an operator reads: accessctl's list, status and diagnose.
        let list = try runCommand(
            [AccessctlTests.accessctl, "credentials", "--socket", harness.socketPath], mergingErrors: true)
        #expect(list.output.contains("keyUnavailable") && list.output.contains("key:        unavailable: sealed with"))
        let shown = try runCommand([AccessctlTests.accessctl, "status", "--socket", harness.socketPath])
        #expect(shown.output.contains("the database was sealed with another data key"), "\(shown.output)")
        let diagnose = try runCommand(
            [AccessctlTests.accessctl, "diagnose", "--socket", harness.socketPath], mergingErrors: true)
        print(diagnose.output)
        #expect(diagnose.status != 0 && diagnose.output.contains("delete it and register again"), "\(diagnose.output)")
        #expect(diagnose.output.contains("keyUnavailable): see `secrets` below"), "\(diagnose.output)")
    }
}
