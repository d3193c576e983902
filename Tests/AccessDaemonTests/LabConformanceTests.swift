import AccessJSON
import BlueZTestSupport
import Foundation
import Testing

/// `readersim conformance` through real BlueZ (issue #14, item 3): readersim's reader keeps
/// every rule it checks, as version 2 and as version 3, and each of readersim's faults is
/// caught by the check it breaks.
extension LabEndToEndTests {
    @Test func theConformanceSuitePassesReadersimAndCatchesEachFault() async throws {
        // A site that still gives readers its key: the run checks a version 2 reader too.
        let lab = try await LabScenario(name: "conformance", readers: Self.frontDoor, legacyReaders: true)
        defer { lab.tearDown() }
        // The holder on hci1 is the conformance run here, not accessd.
        _ = lab.daemon.stop()
        try lab.radio.rssi("hci1", "hci0", -60, sigma: 1)

        let good = try conformance(lab)
        print("$ readersim conformance --reader 2A01 --invitation … --adapter hci1\n\(good.output)")
        #expect(good.status == 0, "\(good.output)\(good.errors)")
        for check in [
            "advertisement", "site tag", "GATT layout", "challenge", "access at MTU 23", "access at the link's MTU",
            "replay refused", "actions", "standing challenge", "malformed fragment refused",
            "unknown credential refused",
            "silent holder timed out",
        ] {
            #expect(verdict(of: check, in: good.output) == "PASS", "\(check): \(good.output)")
        }
        // readersim's reader speaks version 3 (its hold point can be read): asked for certified
        // challenges on every link, as accessd asks, it signs as its controller, and the
        // standing challenge was checked, not passed over.
        #expect(good.output.contains("certified (0x08): certificate"), "\(good.output)")
        #expect(good.output.contains("a response over the challenge before it: decision granted"), "\(good.output)")

        // As version 2 (the site key; a hold point that cannot be read): every check passes too.
        lab.readers.stop()
        try await lab.readers.start(site: lab.site, readers: Self.frontDoor + "\nprotocol_version = 2\n")
        let siteKeyed = try conformance(lab)
        print("version 2:\n\(siteKeyed.output)")
        #expect(siteKeyed.status == 0, "\(siteKeyed.output)\(siteKeyed.errors)")
        #expect(siteKeyed.output.contains("reader and site named, signed by the site key"), "\(siteKeyed.output)")
        #expect(verdict(of: "standing challenge", in: siteKeyed.output) == "PASS", "\(siteKeyed.output)")

        // Each fault, and the check that must catch it.
        let faults: [(fault: String, caughtBy: String)] = [
            ("wrong-key", "challenge"), ("malformed", "challenge"), ("late", "challenge"),
            ("same-nonce", "replay refused"), ("no-timeout", "silent holder timed out"), ("wrong-site", "site tag"),
            ("drop", "access at MTU 23"), ("silent", "advertisement"),
        ]
        for (fault, caughtBy) in faults {
            lab.readers.stop()
            // `late`: 6 s, past the 5 s a holder waits; `silent`: stops advertising at once.
            let delay = fault == "silent" ? 0 : 6
            try await lab.readers.start(
                site: lab.site,
                readers: Self.frontDoor + "\nfault = \"\(fault)\"\nfault_delay = \(delay)\n")
            let run = try conformance(lab, listen: fault == "silent" ? 5 : 10)
            print("fault \(fault):\n\(run.output)")
            #expect(run.status == 1, "fault \(fault): \(run.output)\(run.errors)")
            #expect(
                verdict(of: caughtBy, in: run.output) == "FAIL",
                "fault \(fault) not caught by '\(caughtBy)': \(run.output)")
        }
    }

    private func conformance(_ lab: LabScenario, listen: Int = 10) throws -> CommandResult {
        let invitation = try lab.site.invite("Conformance").url
        return try runCommand(
            [
                SiteHarness.readersimPath, "conformance", "--reader", "2A01", "--invitation", invitation,
                "--adapter", "hci1", "--listen", String(listen),
            ], timeout: .seconds(180))
    }

    /// PASS, FAIL or SKIP on the line of `check`.
    private func verdict(of check: String, in output: String) -> String? {
        output.split(separator: "\n").first { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            return fields.count > 2 && line.contains("  \(check)  ")
        }.map { String($0.prefix(4)) }
    }
}
