import AccessCore
import AccessDaemon
import AccessJSON
import AccessStore
import Crypto
import Foundation
import SiteContract
import SuiteTraits
import Testing

/// docs/site-api.md §7.3's certificates against readersim's real site over HTTP: an enrolled
/// controller gets, in every page, the site's certificate for its own key and the readers
/// its operator named, renewed once half its validity has passed; a page whose certificate
/// is of another site or not signed by the site key is refused whole.
@Suite(.threadOfItsOwn, .timeLimit(.minutes(5)))
struct ControllerCertificateSiteTests {
    @Test func aControllerGetsItsCertificateRenewedAtHalfItsValidity() async throws {
        let directory = NSTemporaryDirectory() + "certificates-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let site = try SiteHarness(directory: directory)
        // Four seconds a certificate, so that renewal (after two) is seen in a test.
        try await site.serve(extra: ["--certificate-validity", "4"])
        defer { site.stop() }
        let client = try SiteClient(caFile: nil, timeout: .seconds(10))
        let address = try SiteAddress.parseHost(site.url)
        let controller = P256.Signing.PrivateKey()
        let enrolled = try JSONValue.parse(
            try site.run([
                "reader", "add", "--name", "lobby", "--public-key", SiteText.base64(controller.publicKey),
                "--readers", "2A01,2a02",
            ]))
        #expect(enrolled["readers"] == ["00002A01", "00002A02"])
        let first = try await client.provisioning(site: address, readerKey: controller, cursor: "0", wait: .zero)
        await client.shutdown()
        let certificate = try #require(first.certificates.first)
        #expect(first.certificates.count == 1)
        #expect(certificate.readers == [ReaderID(0x2A01), ReaderID(0x2A02)])
        #expect(certificate.controllerKey.x963Representation == controller.publicKey.x963Representation)
        #expect(certificate.validUntil - certificate.validFrom == 4)
        #expect(certificate.siteTag == first.site.tag)
        let now = Date().timeIntervalSince1970
        #expect(
            certificate.refusal(
                siteTag: first.site.tag, siteKeys: [first.site.publicKey], reader: ReaderID(0x2A02),
                at: now) == nil)
        // The site's private key signed it, and is no part of it.
        #expect(ControllerIdentity(key: controller, certificate: certificate) != nil)
        // Within the first half: the same certificate; after it: a new serial, valid from then.
        let again = try SiteClient(caFile: nil, timeout: .seconds(10))
        let same = try await again.provisioning(site: address, readerKey: controller, cursor: "0", wait: .zero)
        #expect(same.certificates == first.certificates)
        try await Task.sleep(for: .milliseconds(2_600))
        let renewed = try await again.provisioning(site: address, readerKey: controller, cursor: "0", wait: .zero)
        await again.shutdown()
        let next = try #require(renewed.certificates.first)
        #expect(next.serial > certificate.serial)
        #expect(next.validFrom > certificate.validFrom)
        #expect(next.readers == certificate.readers)
    }

    @Test func aWithdrawnControllersCertificatesReachHoldersInItemSync() async throws {
        let directory = NSTemporaryDirectory() + "withdrawn-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let site = try SiteHarness(directory: directory)
        try await site.serve()
        defer { site.stop() }
        let client = try SiteClient(caFile: nil, timeout: .seconds(10))
        let address = try SiteAddress.parseHost(site.url)
        let credentialKey = P256.Signing.PrivateKey()
        let registration = try await client.register(
            site: address, code: try InvitationCode(try site.invite("Ada").code), deviceName: "kiosk",
            credentialKey: credentialKey.publicKey, secondFactorKey: nil)
        let holder = StoredCredential(
            credential: Credential(
                id: registration.credentialID, siteTag: registration.siteTag, cardholderName: "Ada",
                kind: .mobile, state: .active, sitePublicKey: registration.sitePublicKey,
                signingKey: credentialKey, sealedSecondFactor: nil, secondFactorEnabled: false),
            siteName: registration.siteName, siteURL: site.url, deviceName: "kiosk", registeredAt: 0)
        let controller = P256.Signing.PrivateKey()
        try site.run([
            "reader", "add", "--name", "lobby", "--public-key", SiteText.base64(controller.publicKey),
            "--readers", "2A01",
        ])
        let page = try await client.provisioning(site: address, readerKey: controller, cursor: "0", wait: .zero)
        let serial = try #require(page.certificates.first?.serial)
        // Before: an empty list (a site that issues certificates says so), and a version.
        #expect(try await client.items(of: holder, after: "0").withdrawnCertificates == [])
        let before = try await client.changes(of: holder, since: nil, wait: .zero)
        try site.run(["reader", "remove", ReaderKeyID(publicKey: controller.publicKey).description])
        // After: the serial in every page, and the change channel moved so holders sync now.
        let after = try await client.items(of: holder, after: "0")
        #expect(after.withdrawnCertificates == [serial])
        #expect(after.items.isEmpty)
        #expect(try await client.changes(of: holder, since: nil, wait: .zero) != before)
        await client.shutdown()
    }

    @Test func aPageWithAStrangersCertificateIsRefusedWhole() throws {
        let site = P256.Signing.PrivateKey()
        let tag = SiteTag(0x5117_E001)
        func page(_ certificate: ControllerCertificate) -> ProvisioningPage {
            ProvisioningPage(
                site: ProvisionedSite(
                    name: "Head office", tag: "5117E001", publicKey: SiteText.base64(site.publicKey),
                    signingKey: Base64.encode(Array(site.rawRepresentation))),
                cursor: "1", credentials: [], aperio: [], removed: ProvisioningRemovals(), more: false,
                certificates: [Base64.encode(certificate.encoded)])
        }
        func issue(by key: P256.Signing.PrivateKey, tag: SiteTag) throws -> ControllerCertificate {
            try ControllerCertificate.issue(
                siteKey: key, siteTag: tag, serial: 1, validFrom: 1_000, validUntil: 2_000,
                controllerKey: P256.Signing.PrivateKey().publicKey, readers: [ReaderID(1)])
        }
        #expect(try page(issue(by: site, tag: tag)).validated().certificates.count == 1)
        #expect(throws: ProvisioningPageError.self) {
            try page(issue(by: P256.Signing.PrivateKey(), tag: tag)).validated()
        }
        do {
            _ = try page(issue(by: site, tag: SiteTag(7))).validated()
            Issue.record("a certificate of another site was taken")
        } catch let error as ProvisioningPageError {
            #expect(error.description == "certificates[0] is of site 00000007")
        }
        var garbage = page(try issue(by: site, tag: tag))
        garbage.certificates = ["AAEC"]
        #expect(throws: ProvisioningPageError.self) { try garbage.validated() }
    }
}
