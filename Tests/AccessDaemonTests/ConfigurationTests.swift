import Foundation
import Testing
@testable import AccessDaemon

@Suite("Configuration")
struct ConfigurationTests {
    static var shippedFile: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("config/accessd.toml").path
    }

    @Test func shippedFileIsValidAndEqualsTheDefaults() throws {
        let loaded = try ConfigurationLoader.load(path: Self.shippedFile, mayBeAbsent: false)
        #expect(loaded == AccessdConfiguration())
    }

    @Test func absentFileMeansDefaultsOnlyWhenAllowed() throws {
        #expect(try ConfigurationLoader.load(path: "/nonexistent/accessd.toml", mayBeAbsent: true) == AccessdConfiguration())
        #expect(throws: ConfigurationError(file: "/nonexistent/accessd.toml", line: nil, reason: "no such file")) {
            try ConfigurationLoader.load(path: "/nonexistent/accessd.toml", mayBeAbsent: false)
        }
    }

    @Test func valuesAreRead() throws {
        let c = try ConfigurationLoader.parse("""
            [bluetooth]
            adapter = "hci1"
            scanning = false
            [access]
            automatic = true
            connection_limit = 2
            selection_window = 0.5
            [range]
            sensitivity = "high"
            [features]
            enabled = ["aperio", "salto"]
            [socket]
            path = "/tmp/a.sock"
            [store]
            journal_max_age_days = 2
            [log]
            level = "debug"
            """, file: "t.toml")
        #expect(c.adapter == "hci1")
        #expect(!c.scanningOnStart)
        #expect(c.automaticAccessOnStart)
        #expect(c.connectionLimit == 2)
        #expect(c.selectionWindow == .milliseconds(500))
        #expect(c.rangeConfiguration.sensitivityOffset == -5)
        #expect(c.features == ["aperio", "salto"])
        #expect(c.socketPath == "/tmp/a.sock")
        #expect(c.journalMaxAge == .seconds(2 * 86400))
        #expect(c.logLevel == .debug)
    }

    @Test(arguments: [
        ("[bluetooth]\nscanning = \"yes\"\n", 2, "scanning must be true or false"),
        ("# comment\n[access]\n\nconnection_limit = 0\n", 4, "connection_limit must be within 1...8"),
        ("[range]\nsensitivity = \"extreme\"\n", 2, "sensitivity must be high, medium or low"),
        ("[socket]\npath = \"relative.sock\"\n", 2, "path must be absolute and shorter than 108 bytes"),
        ("[access]\nautomatc = true\n", 2, "unknown key 'automatc'"),
        ("[bluetoth]\nscanning = true\n", 1, "unknown section or key 'bluetoth'"),
        ("[features]\nenabled = [\"teleport\"]\n", 2, "features are aperio, digitalId, salto"),
        ("[log]\nlevel = \"loud\"\n", 2, "level must be one of"),
        ("[access]\ncooldown = [1\n", 2, "Error while parsing"),
    ])
    func badFilesNameTheLineAndTheReason(_ c: (String, Int, String)) {
        do {
            _ = try ConfigurationLoader.parse(c.0, file: "/etc/accessd/accessd.toml")
            Issue.record("accepted: \(c.0)")
        } catch {
            #expect(error.file == "/etc/accessd/accessd.toml")
            #expect(error.line == c.1, "\(error)")
            #expect(error.reason.contains(c.2), "\(error)")
        }
    }

    /// Random bytes and mangled copies of the shipped file: a value or a ConfigurationError, never a crash.
    @Test func survivesFuzzedFiles() throws {
        let shipped = try String(contentsOfFile: Self.shippedFile, encoding: .utf8)
        var generator = SystemRandomNumberGenerator()
        var seed: UInt64 = 12345
        for round in 0..<300 {
            var bytes = Array(shipped.utf8)
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            let edits = Int(seed % 8) + 1
            for edit in 0..<edits {
                let position = Int((seed >> UInt64(edit * 5)) % UInt64(bytes.count))
                bytes[position] = UInt8.random(in: 0x20...0x7E, using: &generator)
            }
            if round % 10 == 0 { bytes = (0..<200).map { _ in UInt8.random(in: 0...255, using: &generator) } }
            _ = try? ConfigurationLoader.parse(String(decoding: bytes, as: UTF8.self), file: "f")
        }
    }
}
