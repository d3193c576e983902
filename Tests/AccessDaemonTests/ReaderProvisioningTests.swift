import AccessCore
import AccessDaemon
import AccessJSON
import BlueZTestSupport
import Crypto
import Foundation
import SiteContract
import SuiteTraits
import Testing

/// docs/site-api.md §7 against readersim's real site over HTTP: only an enrolled reader
/// controller is provisioned, it gets the site's signing key and every credential and Aperio
/// change (a revocation within a held call), and a withdrawn controller is refused.
@Suite(.threadOfItsOwn)
struct ReaderProvisioningTests {
    private func withSite(_ body: (SiteHarness, SiteClient, SiteAddress) async throws -> Void) async throws {
        let directory = NSTemporaryDirectory() + "provisioning-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let site = try SiteHarness(directory: directory)
        try await site.serve()
        let client = try SiteClient(caFile: nil, timeout: .seconds(10))
        do {
            try await body(site, client, try SiteAddress.parseHost(site.url))
        } catch {
            await client.shutdown()
            site.stop()
            throw error
        }
        await client.shutdown()
        site.stop()
    }

    private func enroll(_ site: SiteHarness, _ key: P256.Signing.PrivateKey) throws {
        let answer = try JSONValue.parse(try site.run(["reader", "add", "--name", "lobby", "--public-key", SiteText.base64(key.publicKey)]))
        #expect(answer["keyID"]?.string == ReaderKeyID(publicKey: key.publicKey).description)
    }

    private func registerHolder(_ site: SiteHarness, _ client: SiteClient, _ address: SiteAddress,
                                secondFactor: P256.Signing.PublicKey? = nil) async throws -> (CredentialID, SiteClient.Registration) {
        let code = try InvitationCode(try site.invite("Ada").code)
        let registration = try await client.register(site: address, code: code, deviceName: "kiosk",
                                                     credentialKey: P256.Signing.PrivateKey().publicKey,
                                                     secondFactorKey: secondFactor)
        return (registration.credentialID, registration)
    }

    @Test func onlyAnEnrolledReaderIsProvisionedAndGetsTheSiteKey() async throws {
        try await withSite { site, client, address in
            let readerKey = P256.Signing.PrivateKey()
            // Not enrolled: refused, and nothing about the site leaks.
            await #expect(throws: SiteError.self) {
                _ = try await client.provisioning(site: address, readerKey: readerKey, cursor: "0", wait: .zero)
            }
            do {
                _ = try await client.provisioning(site: address, readerKey: readerKey, cursor: "0", wait: .zero)
            } catch let SiteError.refused(status, code, _) {
                #expect(status == 401 && code == "auth.invalid")
            }
            try enroll(site, readerKey)
            let secondFactor = P256.Signing.PrivateKey().publicKey
            let (id, registration) = try await registerHolder(site, client, address, secondFactor: secondFactor)
            let page = try await client.provisioning(site: address, readerKey: readerKey, cursor: "0", wait: .zero)
            // The signing key is the one holders verify challenges with.
            #expect(page.site.signingKey.publicKey.x963Representation == registration.sitePublicKey.x963Representation)
            #expect(page.site.tag == registration.siteTag)
            #expect(page.credentials.map(\.id) == [id])
            #expect(page.credentials.first?.state == .active)
            #expect(page.credentials.first?.secondFactorKey?.x963Representation == secondFactor.x963Representation)
            #expect(!page.more)
            // Nothing since: the same cursor back, no records.
            let again = try await client.provisioning(site: address, readerKey: readerKey, cursor: page.cursor, wait: .zero)
            #expect(again.cursor == page.cursor && again.credentials.isEmpty && again.aperio.isEmpty)
        }
    }

    @Test func aRevocationEndsAHeldCallAndAperioItemsFollowTheirOwner() async throws {
        try await withSite { site, client, address in
            let readerKey = P256.Signing.PrivateKey()
            try enroll(site, readerKey)
            let (id, _) = try await registerHolder(site, client, address)
            var state = ReaderProvisioningState()
            state.apply(try await client.provisioning(site: address, readerKey: readerKey, cursor: "0", wait: .zero))
            try site.run(["item", "add", "--credential", id.description, "--type", "aperio", "--name", "Store", "--id", "lock-1"])
            state.apply(try await client.provisioning(site: address, readerKey: readerKey, cursor: state.cursor, wait: .zero))
            #expect(state.aperio["lock-1"]?.credential == id)
            #expect(state.aperioRecords.map(\.state) == [.active])

            // A held call, then the site revokes: the call answers at once with the change.
            let cursor = state.cursor
            let started = ContinuousClock.now
            async let held = client.provisioning(site: address, readerKey: readerKey, cursor: cursor, wait: .seconds(20))
            try await Task.sleep(for: .milliseconds(500))
            try site.run(["revoke", id.description])
            let page = try await held
            let waited = ContinuousClock.now - started
            #expect(waited < .seconds(5), "the held call answered after \(waited)")
            state.apply(page)
            #expect(state.credentials[id]?.state == .revoked)
            // The lock credential is only as good as its owner.
            #expect(state.aperioRecords.map(\.state) == [.revoked])

            try site.run(["item", "remove", "lock-1"])
            state.apply(try await client.provisioning(site: address, readerKey: readerKey, cursor: state.cursor, wait: .zero))
            #expect(state.aperio.isEmpty)
        }
    }

    @Test func aWithdrawnReaderIsRefused() async throws {
        try await withSite { site, client, address in
            let readerKey = P256.Signing.PrivateKey()
            try enroll(site, readerKey)
            _ = try await client.provisioning(site: address, readerKey: readerKey, cursor: "0", wait: .zero)
            try site.run(["reader", "remove", ReaderKeyID(publicKey: readerKey.publicKey).description])
            do {
                _ = try await client.provisioning(site: address, readerKey: readerKey, cursor: "0", wait: .zero)
                Issue.record("a withdrawn reader was provisioned")
            } catch let SiteError.refused(status, code, _) {
                #expect(status == 401 && code == "auth.invalid")
            }
            let listed = try site.run(["reader", "list"])
            #expect(listed.contains("\"removed\":true"))
        }
    }
}
