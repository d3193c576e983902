import AccessCore
import AccessJSON
import AccessStore
import BlueZTestSupport
import ControlSocket
import Crypto
import Foundation
import SuiteTraits
import Testing

@testable import AccessDaemon

/// Item validity windows (issue #13, item 6): an item outside its window is kept and listed
/// but not presented, and one whose window opens is presented from then on without a sync.
@Suite("Item validity windows", .threadOfItsOwn, .timeLimit(.minutes(5)))
struct ItemValidityTests {
    /// Through the real chain: readersim's site pushes the windows, accessd lists them.
    @Test func windowsComeFromTheSiteAndAreListed() async throws {
        let harness = try await DaemonHarness(
            config: "[site]\nsync_interval = 3600\n[features]\nenabled = [\"aperio\"]\n")
        let site = try SiteHarness(directory: harness.directory)
        try await site.serve(extra: ["--no-changes"])
        defer { site.stop() }
        try await harness.start()
        let client = try harness.connect()
        let id = try #require(
            try client.call("credentials.register", ["url": .string(try site.invite("Ada").url)]).get()["id"]?.string)
        try site.run([
            "item", "add", "--credential", id, "--type", "aperio", "--name", "Expired", "--id", "old",
            "--valid-until", "-10",
        ])
        try site.run([
            "item", "add", "--credential", id, "--type", "aperio", "--name", "Soon", "--id", "soon",
            "--valid-from", "+2",
        ])
        try site.run(["item", "add", "--credential", id, "--type", "aperio", "--name", "Always", "--id", "always"])
        _ = try client.call("items.sync").get()
        var items = try client.call("items.list").get()["items"]?.array ?? []
        func valid(_ item: String) -> Bool? { items.first { $0["id"] == .string(item) }?["valid"]?.bool }
        #expect(valid("old") == false && valid("always") == true, "\(items)")
        #expect(items.first { $0["id"] == "old" }?["validUntil"]?.number != nil)
        // "soon" opens 2 s after it was added: invalid until then (a loaded machine may already
        // be past it), valid after.
        let opens = try #require(items.first { $0["id"] == "soon" }?["validFrom"]?.number)
        if Date().timeIntervalSince1970 < opens - 0.5 { #expect(valid("soon") == false, "\(items)") }
        while Date().timeIntervalSince1970 < opens + 1.5 { try await Task.sleep(for: .milliseconds(200)) }
        items = try client.call("items.list").get()["items"]?.array ?? []
        #expect(valid("soon") == true, "\(items)")
        #expect(harness.stop() == 0)
    }

    /// What can be presented follows the windows as time passes.
    @Test func anAperioItemOutsideItsWindowIsNotPresented() throws {
        let now = Date().timeIntervalSince1970
        let (store, directory) = try ShellHarness.standaloneStore(registeredAt: now)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let lockSite = SiteTag(0x42)
        let item = StoredItem(
            id: "lock", credentialID: ShellHarness.credentialID, type: "aperio", name: "Lock", state: .active,
            siteTag: lockSite, aperioIdentifier: Array(repeating: 1, count: 8),
            aperioKey: Array(repeating: 2, count: 32), validFrom: now + 60)
        try store.applyItemSync(
            credential: ShellHarness.credentialID, upserted: [item], removed: [], cursor: "1", at: now)
        let book = try CredentialBook(store: store, pinAttempts: 5, logger: .init(label: "validity"))
        #expect(!book.availability(aperioEnabled: true).aperioSites.contains(lockSite))
        #expect(book.refreshOffline(now: now + 61), "the window opened")
        #expect(book.availability(aperioEnabled: true).aperioSites.contains(lockSite))
    }
}
