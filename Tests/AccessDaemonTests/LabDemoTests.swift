import BlueZTestSupport
import Foundation
import SuiteTraits
import Testing

/// `scripts/demo` as a newcomer runs it (issue #35, item 6), inside the lab boot the other
/// real-BlueZ suites share: the script's own in-VM half, with the binaries of this build. What
/// it prints is what the README and docs/field-guide.md show.
@Suite("The demo in the lab", .threadOfItsOwn, .serialized, .enabled(if: Lab.isBumble), .timeLimit(.minutes(10)))
struct LabDemoTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    @Test func theDemoWalksUpAndTheDoorIsGranted() throws {
        let binaries = URL(fileURLWithPath: DaemonHarness.accessdPath).deletingLastPathComponent().path
        let demo = try runCommand(
            [Self.repository.appendingPathComponent("scripts/demo").path, "--in-lab", binaries],
            mergingErrors: true, timeout: .seconds(480))
        print(demo.output)
        #expect(demo.status == 0)
        let output = demo.output
        for expected in [
            "registered ", "automatic access on", "(no readers heard)", "in manual range", "in auto range",
            "access.completed  reader 00002A01 (Front door): automatic granted: granted (access)",
            "reader 00002A01: gone", "door:           reader 00002A01 (Front door), automatic access: granted",
            "reader said:    granted",
        ] {
            #expect(output.contains(expected), "no '\(expected)' in the demo's output")
        }
        // The reader's adapter answers the kiosk's GAP name read with its own name, "BlueZ
        // 5.66": the reader is still shown by the name it advertises (ReaderNameTests).
        #expect(!output.contains("BlueZ 5.66"), "the reader's name is its own")
    }
}
