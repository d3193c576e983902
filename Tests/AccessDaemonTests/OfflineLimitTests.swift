import AccessCore
import AccessJSON
import AccessStore
import BlueZTestSupport
import Crypto
import Foundation
import Testing

@testable import AccessDaemon
@testable import ControlSocket

/// `[site] max_offline` (issue #13, item 6): a credential whose site has not been synced with
/// for longer is not presented, the SDK state says so, a request is refused with the cause,
/// and a successful sync brings it back at once.
@Suite("The offline limit", .serialized, .timeLimit(.minutes(5)))
struct OfflineLimitTests {
    @Test func aCredentialNotSyncedForTooLongIsWithheld() async throws {
        // The harness's credential was registered at time 0 and never synced: long past 60 s.
        let shell = try ShellHarness { $0.maxOffline = .seconds(60) }
        try await shell.start()
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()))
        let status = try await shell.call("status.get").get()
        #expect(status["states"]?.array?.contains("errorCredentialsOffline") == true, "\(status)")
        #expect(status["usableCredentialCount"] == 0)
        let refused = await shell.call("access.request", ["reader": "2A01"], role: .operator)
        #expect(
            refused.failureData?["error"] == "forbidden" && refused.failureData?["cause"] == "credentialOffline",
            "\(refused)")
        #expect(refused.failureMessage?.contains("[site] max_offline") == true, "\(refused)")

        // A sync reaches the site: presented again at once.
        try shell.daemon.book.applyItemPage(
            credential: ShellHarness.credentialID, upserted: [], removed: [], cursor: "1")
        try await shell.waitUntil("usable again") {
            try await shell.call("status.get").get()["usableCredentialCount"] == 1
        }
        // The access engine hears of it through its door, a moment after the SDK state.
        var answer = await shell.call("access.request", ["reader": "2A01"], role: .operator)
        for _ in 0..<100 where answer.failureData?["cause"] == "credentialOffline" {
            try await Task.sleep(for: .milliseconds(20))
            answer = await shell.call("access.request", ["reader": "2A01"], role: .operator)
        }
        #expect(try answer.get()["granted"] == true, "\(answer)")
        await shell.stop()
    }

    /// Time passing alone withholds a credential: synced 59 s ago with a 60 s limit, it is
    /// withheld two seconds later with nothing else happening (SiteSync asks every second).
    @Test func timePassingWithholdsACredential() throws {
        let now = Date().timeIntervalSince1970
        let (store, directory) = try ShellHarness.standaloneStore(registeredAt: now - 3600, lastSyncAt: now - 59)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let book = try CredentialBook(store: store, pinAttempts: 5, maxOffline: 60, logger: .init(label: "offline"))
        #expect(book.offlineCredentials.isEmpty)
        #expect(book.availability(aperioEnabled: false).mobileSites == [ShellHarness.siteTag])
        #expect(book.refreshOffline(now: now + 2))
        #expect(book.offlineCredentials == [ShellHarness.credentialID])
        let withheld = book.availability(aperioEnabled: false)
        #expect(withheld.mobileSites.isEmpty && withheld.offlineSites == [ShellHarness.siteTag])
        #expect(
            withheld.refusal(to: .gallagherStyle, site: ShellHarness.siteTag)
                == .credentialOffline(ShellHarness.siteTag))
        #expect(!book.refreshOffline(now: now + 3), "no change, no notice")
    }

    @Test func theLimitIsChecked() throws {
        #expect(try ConfigurationLoader.parse("[site]\nmax_offline = 0\n", file: "a").maxOffline == nil)
        #expect(try ConfigurationLoader.parse("[site]\nmax_offline = 86400\n", file: "a").maxOffline == .seconds(86400))
        #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.parse("[site]\nmax_offline = 30\n", file: "a")
        }
    }
}
