import AccessCore
import AccessJSON
import AccessStore
import BlueZTestSupport
import Crypto
import Foundation
import Testing

@testable import AccessDaemon
@testable import ControlSocket

/// Several credentials (issue #13, item 3): which one is presented when a request names it,
/// and which site's reader goes first when readers of several sites are in range.
@Suite("Choosing among credentials", .serialized, .timeLimit(.minutes(5)))
struct CredentialChoiceTests {
    static let otherSite = SiteTag(0x0B0B_0001)
    static let otherCredential = CredentialID("11111111-2222-3333-4444-555555555555")!

    /// A second credential, for another site.
    private func addOtherCredential(_ shell: ShellHarness, state: CredentialState = .active) throws {
        let key = P256.Signing.PrivateKey()
        let credential = Credential(
            id: Self.otherCredential, siteTag: Self.otherSite, cardholderName: "Ada Lovelace",
            kind: .mobile, state: state, sitePublicKey: key.publicKey,
            signingKey: P256.Signing.PrivateKey(), sealedSecondFactor: nil, secondFactorEnabled: false)
        try shell.daemon.book.insert(
            StoredCredential(
                credential: credential, siteName: "Annex", siteURL: "http://127.0.0.1:9",
                deviceName: "kiosk", registeredAt: 1))
        shell.daemon.book.changed()
    }

    @Test func aRequestPresentsTheCredentialItNames() async throws {
        let shell = try ShellHarness()
        try await shell.start()
        try addOtherCredential(shell)
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()))
        let answer = try await shell.call(
            "access.request", ["reader": "2A01", "credential": "0f1e2d3c"], role: .operator
        ).get()
        #expect(
            answer["granted"] == true && answer["credential"] == .string(ShellHarness.credentialID.description),
            "\(answer)")

        let wrong = await shell.call("access.request", ["reader": "2A01", "credential": "11111111"], role: .operator)
        #expect(
            wrong.failureData?["error"] == "forbidden" && wrong.failureData?["cause"] == "credentialNotForReader",
            "\(wrong)")
        #expect(
            wrong.failureMessage
                == "refused: credential 11111111… cannot be presented to reader 00002A01: it is for site 0B0B0001, the reader is of site 5117E001",
            "\(wrong)")
        let unknown = await shell.call("access.request", ["reader": "2A01", "credential": "ffff"], role: .operator)
        #expect(unknown.failureData?["error"] == "credential.unknown", "\(unknown)")
        await shell.stop()
    }

    /// Priority: bounded, shown, journalled, kept in the store, and followed by automatic
    /// access: of two readers of two sites in range, the higher priority's goes first even
    /// when it is further.
    @Test func theHigherPrioritysReaderGoesFirst() async throws {
        let shell = try ShellHarness { $0.automaticAccessOnStart = false }
        try await shell.start()
        try addOtherCredential(shell)
        let refused = await shell.call("credentials.setPriority", ["id": "1111", "priority": 101])
        #expect(refused.failureMessage == "invalid params: priority is -100 to 100", "\(refused)")
        let set = try await shell.call("credentials.setPriority", ["id": "1111", "priority": 10]).get()
        #expect(set["priority"] == 10 && set["id"] == .string(Self.otherCredential.description), "\(set)")
        #expect(try shell.store.credentials().first { $0.credential.id == Self.otherCredential }?.priority == 10)
        let changed = try await shell.waitForEvent("credentials.changed") { $0["reason"] == "priority" }
        #expect(changed["priority"] == 10)

        // The site's reader (5117E001) near, the annex's (0B0B0001) further: the annex first.
        let annex = ReaderSession.Configuration(
            readerID: ReaderID(0x2B01), siteTag: Self.otherSite, siteKey: P256.Signing.PrivateKey(), policy: .fromSite,
            secondFactorRequired: false, credentials: [])
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()), rssi: -65)
        try await shell.readerAdvertises(
            FakeReader(annex), rssi: -72, siteTag: Self.otherSite, id: ReaderID(0x2B01),
            address: "00:BB:03:00:00:00")
        _ = try await shell.call("automaticAccess.set", ["enabled": true], role: .operator).get()
        let first = try await shell.waitForEvent("access.started")
        #expect(first["reader"] == "00002B01", "\(first)")
        await shell.stop()
    }
}
