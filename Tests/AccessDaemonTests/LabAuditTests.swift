import AccessJSON
import BlueZTestSupport
import Foundation
import Testing

/// The audit upload through the real parts (issue #13, item 5; docs/site-api.md §4.5): the
/// real accessd deciding at a readersim reader over real BlueZ, the real `readersim site`
/// keeping what it is sent. The site and accessd are killed (SIGKILL) with events waiting and
/// with an upload under way; afterwards the site holds exactly the journal's events.
extension LabEndToEndTests {
    @Test func auditEventsSurviveKillsOfTheSiteAndAccessd() async throws {
        let lab = try await LabScenario(name: "audit", accessdConfig: Self.quickRange, readers: Self.frontDoor)
        defer { lab.tearDown() }
        let credential = try await lab.register()
        try lab.radio.rssi("hci1", "hci0", -60)
        _ = try await lab.waitForReader("00002A01")
        func access() throws { _ = try lab.manual("access.request", ["reader": "2A01"]) }
        func audit() throws -> JSONValue { try lab.daemon.call("status.get").get()["audit"] ?? .null }
        /// The journal's events the site is owed: the uploaded kinds, of this credential.
        func journalled() throws -> [JSONValue] {
            let (status, output) = try lab.daemon.accessctl([
                "events", "--json", "--since", "0",
                "--kinds", "access.completed,secondFactor.required",
            ])
            guard status == 0 else { throw TestEnvironmentError("accessctl events: \(output)") }
            return output.split(separator: "\n").compactMap { try? JSONValue.parse(String($0)) }
                .filter { $0["data"]?["credential"] == .string(credential) }
        }
        func kept() throws -> [JSONValue] {
            try lab.site.run(["events", "--credential", credential]).split(separator: "\n")
                .compactMap { try? JSONValue.parse(String($0)) }
        }
        func waitUntilCurrent(_ what: String) async throws {
            for _ in 0..<300 {
                if let owed = try? journalled().count, owed > 0, try kept().count == owed, try audit()["backlog"] == 0 {
                    return
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            throw TestEnvironmentError(
                "\(what): the site has \(try kept().count) of \(try journalled().count); audit \(try audit())\n\(lab.daemon.log)"
            )
        }

        // The site up: decisions reach it.
        for _ in 0..<2 { try access() }
        try await waitUntilCurrent("with the site up")

        // The site killed: decisions wait, counted.
        let port = lab.site.port
        lab.site.kill()
        for _ in 0..<2 { try access() }
        for _ in 0..<100 where (try audit()["sites"]?.array?.first?["state"]) != "failing" {
            try await Task.sleep(for: .milliseconds(100))
        }
        let waiting = try audit()
        #expect(waiting["sites"]?.array?.first?["state"] == "failing", "\(waiting)")
        #expect(waiting["backlog"]?.int ?? 0 >= 2, "\(waiting)")
        let (_, statusText) = try lab.daemon.accessctl(["status"])
        print("accessctl status with the site away:\n\(statusText)")
        #expect(statusText.contains("audit upload:") && statusText.contains("waiting"), "\(statusText)")

        // accessd killed with its backlog; the site back on its port; accessd started again.
        lab.daemon.kill()
        try await lab.site.serveOn(port: port, fault: nil)
        try await lab.daemon.start()
        _ = try await lab.waitForReader("00002A01")
        try await waitUntilCurrent("after the kills")

        // accessd killed as a decision is uploaded.
        try access()
        lab.daemon.kill()
        try await lab.daemon.start()
        _ = try await lab.waitForReader("00002A01")
        try await waitUntilCurrent("after a kill during an upload")

        let owed = try journalled()
        let site = try kept()
        #expect(site.map { $0["seq"] } == owed.map { $0["seq"] }, "the site's events are the journal's, in order")
        #expect(site.map { $0["kind"] } == owed.map { $0["kind"] })
        #expect(site.map { $0["data"]?["outcome"] } == owed.map { $0["data"]?["outcome"] })
        let copies = site.map { $0["copies"]?.int ?? 0 }
        // Only a batch under way when accessd was killed may have arrived twice (kept once).
        #expect(copies.filter { $0 > 1 }.count <= 1 && copies.allSatisfy { $0 <= 2 }, "\(copies)")
        print("audit: \(owed.count) events owed, \(site.count) kept, copies \(copies)")
    }
}
