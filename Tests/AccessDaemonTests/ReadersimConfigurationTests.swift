import BlueZTestSupport
import Foundation
import SuiteTraits
import Testing

/// `readersim readers --check`: the shipped example is valid, and bad files are refused
/// with the line and the reason, never a crash.
@Suite("readersim reader files", .threadOfItsOwn, .timeLimit(.minutes(5)))
struct ReadersimConfigurationTests {
    private func check(_ text: String) throws -> (Int32, String) {
        let path = NSTemporaryDirectory() + "readersim-\(UUID().uuidString).toml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try run(["readers", "--config", path, "--check"])
    }

    private func run(_ arguments: [String]) throws -> (Int32, String) {
        let result = try runCommand([SiteHarness.readersimPath] + arguments, mergingErrors: true)
        return (result.status, result.output)
    }

    @Test func theShippedExampleIsValid() throws {
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("config/readersim.example.toml").path
        let (status, output) = try run(["readers", "--config", example, "--check"])
        #expect(status == 0, "\(output)")
        #expect(output.contains("2 reader(s)"))
    }

    /// Issue #17: a file that is not UTF-8 was refused as "cannot read" with no line.
    @Test func aByteThatIsNotUTF8IsRefusedWithItsLine() throws {
        let path = NSTemporaryDirectory() + "readersim-\(UUID().uuidString).toml"
        try Data(
            "[site]\nurl = \"http://127.0.0.1:8700\"\nkey = \"k\"\n[door]\nid = \"2A01".utf8 + [0xC3, 0x28]
                + Data("\"\n".utf8)
        )
        .write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (status, output) = try run(["readers", "--config", path, "--check"])
        #expect(status != 0)
        #expect(output.contains("\(path):5: not UTF-8"), "\(output)")
    }

    @Test(arguments: [
        ("[a]\nid = \"1\"\n", "[site]"),
        ("[site]\nurl = \"http://127.0.0.1:8700\"\nkey = \"k\"\n", "no readers"),
        ("[site]\nurl = \"http://127.0.0.1:8700\"\nkey = \"k\"\n[a]\nid = \"0\"\n", ":5: [a] id must be"),
        (
            "[site]\nurl = \"http://127.0.0.1:8700\"\nkey = \"k\"\n[a]\nid = \"1\"\nkind = \"nfc\"\n",
            ":6: [a] kind must be"
        ),
        ("[site]\nurl = \"http://127.0.0.1:8700\"\nkey = \"k\"\n[a]\nid = \"1\"\n[b]\nid = \"1\"\n", "used twice"),
        ("[site]\nurl = \"http://127.0.0.1:8700\"\nkey = \"k\"\n[a]\nid = \"1\"\nactions = [\"x\"]\n", "ID:NAME"),
        (
            "[site]\nurl = \"http://127.0.0.1:8700\"\nkey = \"k\"\n[a]\nid = \"1\"\ndecision = \"deny:maybe\"\n",
            "not an AccessDecision"
        ),
        (
            "[site]\nurl = \"http://127.0.0.1:8700\"\nkey = \"k\"\n[a]\nid = \"1\"\nauto_connect_path_loss = 50\nmanual_connect_path_loss = 40\n",
            "must not exceed"
        ),
        (
            "[site]\nurl = \"http://127.0.0.1:8700\"\nkey = \"k\"\n[a]\nid = \"1\"\ncolour = \"red\"\n",
            "unknown key 'colour'"
        ),
        (
            "[site]\nurl = \"http://127.0.0.1:8700\"\nkey = \"k\"\n[a]\nid = \"1\"\nadapter = \"hci0\"\n[b]\nid = \"2\"\n",
            "both on hci0"
        ),
        (
            "[site]\nurl = \"http://127.0.0.1:8700\"\nkey = \"k\"\n[a]\nid = \"1\"\nsecond_factor_wait = 10\n",
            ":6: [a] second_factor_wait"
        ),
        ("[site\n", ":1:"),
        ("[site]\ndb = \"x\"\n[a]\nid = \"1\"\n", "unknown key 'db' in [site] (known: url, key, ca_file)"),
        ("[site]\nkey = \"k\"\n[a]\nid = \"1\"\n", "[site] url must be the site's URL"),
        ("[site]\nurl = \"http://10.0.0.1:8700\"\nkey = \"k\"\n[a]\nid = \"1\"\n", ":2: [site] url: "),
        ("[site]\nurl = \"http://127.0.0.1:8700\"\n[a]\nid = \"1\"\n", "[site] key must name"),
    ])
    func badFilesAreRefusedWithTheReason(text: String, expected: String) throws {
        let (status, output) = try check(text)
        #expect(status == 64, "\(output)")
        #expect(output.contains(expected), "\(output)")
    }
}
