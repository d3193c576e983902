import AccessJSON
import ControlSocket
import Foundation
import SuiteTraits
import Testing

/// A site restored from a backup (issue #36): its change counter is behind the cursor a kiosk
/// holds. The site refuses that cursor (docs/site-api.md §7.3); accessd reads every item again
/// from 0, once, and drops what the restored site no longer lists.
@Suite("a site restored from a backup", .threadOfItsOwn, .timeLimit(.minutes(5)))
struct SiteRestoredTests {
    @Test func itemsAreReadAgainFromTheStartAndWhatTheSiteForgotIsDropped() async throws {
        let harness = try await DaemonHarness(config: CredentialEndToEndTests.slowSync)
        let site = try SiteHarness(directory: harness.directory)
        try await site.serve(extra: ["--no-changes"])
        try await harness.start()
        defer {
            site.stop()
            _ = harness.stop()
        }
        let client = try harness.connect()
        let id = try #require(
            try client.call("credentials.register", ["url": .string(try site.invite("Ada").url)]).get()["id"]?.string)
        try site.run(["item", "add", "--credential", id, "--type", "aperio", "--name", "Lock", "--id", "lock-0"])
        _ = try client.call("items.sync").get()
        let port = try #require(site.url.split(separator: ":").last.map(String.init))

        // The backup: the site's database as it is now.
        site.stop()
        let backup = harness.directory + "/site-backup"
        try FileManager.default.createDirectory(atPath: backup, withIntermediateDirectories: true)
        let files = try FileManager.default.contentsOfDirectory(atPath: harness.directory).filter {
            $0.hasPrefix("site.sqlite")
        }
        for file in files {
            try FileManager.default.copyItem(atPath: harness.directory + "/" + file, toPath: backup + "/" + file)
        }
        try await site.serveOn(port: port, fault: nil)
        for lock in ["lock-1", "lock-2", "lock-3"] {
            try site.run(["item", "add", "--credential", id, "--type", "aperio", "--name", "Lock", "--id", lock])
        }
        _ = try client.call("items.sync").get()
        #expect(try itemIDs(client) == ["lock-0", "lock-1", "lock-2", "lock-3"])

        // Restored: lock-1…3 never happened; one new item since.
        site.stop()
        for file in try FileManager.default.contentsOfDirectory(atPath: harness.directory)
        where file.hasPrefix("site.sqlite") {
            try FileManager.default.removeItem(atPath: harness.directory + "/" + file)
        }
        for file in files {
            try FileManager.default.copyItem(atPath: backup + "/" + file, toPath: harness.directory + "/" + file)
        }
        try site.run(["item", "add", "--credential", id, "--type", "aperio", "--name", "Lock", "--id", "lock-9"])
        try await site.serveOn(port: port, fault: nil)
        let sync = try client.call("items.sync").get()
        #expect(sync["credentials"]?.array?.first?["error"] == nil, "\(sync.jsonText)")
        #expect(try itemIDs(client) == ["lock-0", "lock-9"], "\(harness.log)")
        #expect(harness.log.contains("the site does not know the item cursor; reading every item again"))
    }

    private func itemIDs(_ client: ControlConnection) throws -> [String] {
        (try client.call("items.list").get()["items"]?.array ?? []).compactMap { $0["id"]?.string }.sorted()
    }
}
