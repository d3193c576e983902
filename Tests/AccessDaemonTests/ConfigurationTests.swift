import Foundation
import Testing

@testable import AccessDaemon

@Suite("Configuration", .timeLimit(.minutes(5)))
struct ConfigurationTests {
    static var shippedFile: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("config/accessd.toml").path
    }

    @Test func shippedFileIsValidAndEqualsTheDefaults() throws {
        let loaded = try ConfigurationLoader.load(path: Self.shippedFile, mayBeAbsent: false)
        #expect(loaded == AccessdConfiguration())
    }

    /// The shipped file documents every key the loader reads, in its section (set, or
    /// commented out with its default or an example), and no key it would refuse.
    @Test func theShippedFileDocumentsEveryKeyAndNoOther() throws {
        var documented: Set<String> = []
        var section = ""
        for line in try String(contentsOfFile: Self.shippedFile, encoding: .utf8).split(separator: "\n") {
            let text = line.hasPrefix("# ") ? line.dropFirst(2) : line[...]
            if text.hasPrefix("["), let end = text.firstIndex(of: "]") {
                section = String(text[text.index(after: text.startIndex)..<end])
                continue
            }
            guard let equals = text.range(of: " = "),
                text[..<equals.lowerBound].allSatisfy({ $0.isLowercase || $0 == "_" })
            else { continue }
            let key = String(text[..<equals.lowerBound])
            if section.hasPrefix(ConfigurationReader.readerTablePrefix) {
                #expect(
                    ConfigurationReader.readerRuleKeys.contains(key), "[\(section)] \(key) is not a reader rule key")
            } else {
                documented.insert("[\(section)] \(key)")
            }
        }
        let declared = Set(ConfigurationKeys.all.map(\.name))
        #expect(
            declared.subtracting(documented).isEmpty,
            "not in config/accessd.toml: \(declared.subtracting(documented).sorted())")
        #expect(
            documented.subtracting(declared).isEmpty,
            "not read by accessd: \(documented.subtracting(declared).sorted())")
    }

    @Test func commandsAreTrueFalseOrAListOfMethods() throws {
        let tls = "[mqtt]\nurl = \"mqtts://b\"\ncert_file = \"/c.pem\"\nkey_file = \"/k.pem\"\n"
        #expect(try ConfigurationLoader.parse(tls, file: "t").mqtt?.commands == [])
        #expect(
            try ConfigurationLoader.parse(tls + "commands = true\n", file: "t").mqtt?.commands
                == ["access.next", "access.request", "scanning.set"])
        let listed = try ConfigurationLoader.parse(
            tls + "commands = [\"access.next\", \"credentials.register\", \"access.next\"]\n", file: "t")
        #expect(listed.mqtt?.commands == ["access.next", "credentials.register"])
    }

    @Test func adaptersAreAListInPreferenceOrderOrAuto() throws {
        let listed = try ConfigurationLoader.parse("[bluetooth]\nadapters = [\"hci1\", \"hci0\"]\n", file: "t")
        #expect(listed.adapters == ["hci1", "hci0"] && listed.adapterOrder == ["hci1", "hci0"])
        #expect(try ConfigurationLoader.parse("[bluetooth]\nadapters = \"auto\"\n", file: "t").adapterOrder == nil)
        #expect(try ConfigurationLoader.parse("[bluetooth]\nadapter = \"hci2\"\n", file: "t").adapterOrder == ["hci2"])
    }

    @Test func absentFileMeansDefaultsOnlyWhenAllowed() throws {
        #expect(
            try ConfigurationLoader.load(path: "/nonexistent/accessd.toml", mayBeAbsent: true) == AccessdConfiguration()
        )
        #expect(throws: ConfigurationError(file: "/nonexistent/accessd.toml", line: nil, reason: "no such file")) {
            try ConfigurationLoader.load(path: "/nonexistent/accessd.toml", mayBeAbsent: false)
        }
    }

    @Test func valuesAreRead() throws {
        let c = try ConfigurationLoader.parse(
            """
            [bluetooth]
            adapter = "hci1"
            scanning = false
            [access]
            automatic = true
            connection_limit = 2
            selection_window = 0.5
            [range]
            filter = "median_average"
            median_window = 1
            sensitivity = "veryLow"
            [features]
            enabled = ["aperio", "salto"]
            [socket]
            path = "/tmp/a.sock"
            [store]
            journal_max_age_days = 2
            [log]
            level = "debug"
            [mqtt]
            url = "mqtts://[fd00::1]:8884"
            topic_prefix = "site/a"
            client_id = "kiosk-1"
            username = "kiosk-1"
            password_file = "/etc/accessd/mqtt-password"
            ca_file = "/etc/accessd/ca.pem"
            qos = 0
            """, file: "t.toml")
        #expect(c.adapter == "hci1")
        #expect(!c.scanningOnStart)
        #expect(c.automaticAccessOnStart)
        #expect(c.connectionLimit == 2)
        #expect(c.selectionWindow == .milliseconds(500))
        #expect(c.rangeConfiguration.sensitivityOffset == -5)
        #expect(c.rangeConfiguration.filter == .medianAverage)
        #expect(c.rangeConfiguration.effectiveMedianWindow == 1)
        #expect(try ConfigurationLoader.parse("", file: "t").rangeConfiguration.filter == .trendGated)
        #expect(try ConfigurationLoader.parse("", file: "t").rangeConfiguration.effectiveMedianWindow == 3)
        #expect(c.features == ["aperio", "salto"])
        #expect(c.socketPath == "/tmp/a.sock")
        #expect(c.journalMaxAge == .seconds(2 * 86400))
        #expect(c.logLevel == .debug)
        #expect(
            c.mqtt
                == MQTTConfiguration(
                    host: "fd00::1", port: 8884, tls: true, topicPrefix: "site/a", clientID: "kiosk-1",
                    username: "kiosk-1", passwordFile: "/etc/accessd/mqtt-password",
                    caFile: "/etc/accessd/ca.pem", qos: 0))
        #expect(try ConfigurationLoader.parse("[mqtt]\nurl = \"mqtt://broker\"\n", file: "t").mqtt?.port == 1883)
        #expect(try ConfigurationLoader.parse("", file: "t").mqtt == nil)
    }

    @Test(arguments: [
        ("[bluetooth]\nscanning = \"yes\"\n", 2, "scanning must be true or false"),
        ("[bluetooth]\nadapters = \"hci0\"\n", 2, "adapters must be \"auto\" or a list of adapter names"),
        ("[bluetooth]\nadapters = [\"usb0\"]\n", 2, "adapters must be \"auto\" or a list"),
        ("[bluetooth]\nadapters = []\n", 2, "adapters must be \"auto\" or a list"),
        ("[bluetooth]\nadapters = [\"hci1\", \"hci1\"]\n", 2, "hci1 is listed twice"),
        ("[bluetooth]\nadapter = \"hci1\"\nadapters = [\"hci2\"]\n", 3, "set adapter (one) or adapters (a list)"),
        ("[site]\npins = \"sha256//x\"\n", 2, "pins must be a list of keys like [\"sha256//<base64>\"]"),
        ("[site]\npins = [\"md5//AAAA\"]\n", 2, "md5//AAAA: a pin is sha256// and a SHA-256 hash in base64"),
        ("[site]\npins = [\"sha256//AAAA\"]\n", 2, "sha256//AAAA: not 32 bytes in base64 after sha256//"),
        ("# comment\n[access]\n\nconnection_limit = 0\n", 4, "connection_limit must be within 1...8"),
        (
            "[range]\nsensitivity = \"extreme\"\n", 2,
            "sensitivity must be veryLow (-5 dB), low (-2.5 dB) or normal (0 dB)"
        ),
        ("[range]\nfilter = \"kalman\"\n", 2, "filter must be trend_gated or median_average"),
        ("[range]\nmedian_window = 7\n", 2, "median_window must be within 1...5"),
        ("[socket]\npath = \"relative.sock\"\n", 2, "path must be absolute and shorter than 108 bytes"),
        ("[access]\nautomatc = true\n", 2, "unknown key 'automatc'"),
        ("[bluetoth]\nscanning = true\n", 1, "unknown section or key 'bluetoth'"),
        ("[features]\nenabled = [\"teleport\"]\n", 2, "features are aperio, digitalId, salto"),
        ("[log]\nlevel = \"loud\"\n", 2, "level must be one of"),
        ("[access]\ncooldown = [1\n", 2, "arrays must be closed"),
        ("[access]\ncooldown = 1\ncooldown = 2\n", 3, "cooldown is set twice (first on line 2)"),
        ("[log]\nlevel = info\n", 2, "'info' is not a value (strings need quotes)"),
        ("scanning = true\n", 1, "unknown section or key 'scanning'"),
        ("[log]\n\"level\" = \"info\"\n", 2, "quoted keys are not supported"),
        ("[prompts]\nsecond_factor = \"open\n", 2, "unterminated string"),
        ("[mqtt]\nusername = \"k\"\n", 2, "[mqtt] needs url"),
        ("[mqtt]\nurl = \"http://broker\"\n", 2, "url must be mqtt://HOST[:PORT] or mqtts://HOST[:PORT]"),
        ("[mqtt]\nurl = \"mqtt://broker:0\"\n", 2, "the port must be 1 to 65535"),
        ("[mqtt]\nurl = \"mqtt://user@broker\"\n", 2, "no path, no user@"),
        (
            "[mqtt]\nurl = \"mqtt://b\"\ntopic_prefix = \"a/#\"\n", 3,
            "topic_prefix must be printable ASCII without spaces, + or #"
        ),
        ("[mqtt]\nurl = \"mqtt://b\"\nclient_id = \"a/b\"\n", 3, "client_id must not contain /"),
        ("[mqtt]\nurl = \"mqtt://b\"\npassword_file = \"/p\"\n", 3, "password_file needs username"),
        ("[mqtt]\nurl = \"mqtt://b\"\nca_file = \"/ca.pem\"\n", 2, "need an mqtts:// url"),
        ("[mqtt]\nurl = \"mqtts://b\"\ncert_file = \"/c.pem\"\n", 3, "cert_file and key_file go together"),
        ("[mqtt]\nurl = \"mqtt://b\"\nqos = 2\n", 3, "qos must be within 0...1"),
        (
            "[mqtt]\nurl = \"mqtt://b\"\nusername = \"k\"\ncommands = true\n", 4,
            "commands need an mqtts:// url and a username"
        ),
        ("[mqtt]\nurl = \"mqtts://b\"\ncommands = true\n", 3, "commands need an mqtts:// url and a username"),
        (
            "[mqtt]\nurl = \"mqtts://b\"\nusername = \"k\"\ncommands = [\"teleport\"]\n", 4,
            "commands lists method names"
        ),
        (
            "[mqtt]\nurl = \"mqtts://b\"\nusername = \"k\"\ncommands = \"yes\"\n", 4,
            "commands must be true, false or a list"
        ),
        (
            "[mqtt]\nurl = \"mqtts://b\"\nusername = \"k\"\ncommands = [\"secondFactor.respond\"]\n", 4,
            "secondFactor.respond is never taken over MQTT: it carries a PIN"
        ),
        (
            "[mqtt]\nurl = \"mqtts://b\"\nusername = \"k\"\ncommands = [\"access.next\", \"credentials.register\"]\n",
            4,
            "credentials.register is an administrator's method: it needs a client certificate (cert_file)"
        ),
        (
            "[mqtt]\nurl = \"mqtts://b\"\nusername = \"k\"\ncommands = [\"diagnostics.collect\"]\n", 4,
            "diagnostics.collect is an administrator's method: it needs a client certificate (cert_file)"
        ),
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

    /// Issue #17: a file that is not UTF-8 was refused as "cannot read" with no line.
    @Test func aByteThatIsNotUTF8IsRefusedWithItsLine() throws {
        let path = NSTemporaryDirectory() + "accessd-\(UUID().uuidString).toml"
        try Data("[log]\n# café\nlevel = \"info".utf8 + [0xFF] + Data("\"\n".utf8)).write(
            to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: ConfigurationError(file: path, line: 3, reason: "not UTF-8 (byte 28 of the file)")) {
            try ConfigurationLoader.load(path: path, mayBeAbsent: false)
        }
    }

    /// Random bytes and mangled copies of the shipped file: a value or a ConfigurationError,
    /// never a crash. (This test found TOMLKit aborting on bad keys; hence our own parser.)
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func survivesFuzzedFiles(seed: UInt64) throws {
        let shipped = Array(try String(contentsOfFile: Self.shippedFile, encoding: .utf8).utf8)
        var state = seed
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 17
        }
        var refused = 0
        for round in 0..<2_000 {
            var bytes = shipped
            if round % 10 == 0 {
                bytes = (0..<Int(next() % 300)).map { _ in UInt8(truncatingIfNeeded: next()) }
            } else {
                for _ in 0..<Int(next() % 6) + 1 {
                    let position = Int(next() % UInt64(bytes.count))
                    let printable: [UInt8] = Array(" \t\n[]=\"'#.,_-0123456789aeflrstu{}\\".utf8)
                    bytes[position] = printable[Int(next() % UInt64(printable.count))]
                }
            }
            do {
                _ = try ConfigurationLoader.parse(String(decoding: bytes, as: UTF8.self), file: "f")
            } catch {
                refused += 1
                #expect(error.line == nil || error.line! >= 1)
            }
        }
        #expect(refused > 0)
    }
}
