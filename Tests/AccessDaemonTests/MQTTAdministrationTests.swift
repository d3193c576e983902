import AccessJSON
import BlueZTestSupport
import Foundation
import SuiteTraits
import Testing

/// Administration over the broker (issue #34, items 1 and 2): `[mqtt] commands` lists the
/// methods a kiosk takes; with a client certificate, an administrator's `credentials.register`
/// enrols the kiosk from the site's broker, no login on it. Against the real mosquitto with the
/// site example's certificates and ACL.
@Suite("administration over MQTT", .threadOfItsOwn, .timeLimit(.minutes(5)))
struct MQTTAdministrationTests {
    static let device = "kiosk-enrol"

    /// The site example's broker, and a kiosk's configuration for it: `device`'s client
    /// certificate, taking `commands`. The harness is not started.
    static func kiosk(
        _ device: String, commands: [String], harness: DaemonHarness
    ) async throws -> (broker: MosquittoBroker, kiosk: (certificate: String, key: String)) {
        let broker = try MosquittoBroker(siteExampleIn: harness.directory + "/broker")
        try await broker.start()
        let pki = try #require(broker.pki)
        let kiosk = try pki.client(device)
        try harness.writeConfig(
            """
            [mqtt]
            url = "mqtts://127.0.0.1:\(broker.port)"
            client_id = "\(device)"
            ca_file = "\(pki.caCertificate)"
            cert_file = "\(kiosk.certificate)"
            key_file = "\(kiosk.key)"
            commands = [\(commands.map { "\"\($0)\"" }.joined(separator: ", "))]
            """)
        return (broker, kiosk)
    }

    @Test func anAdministratorEnrolsAKioskThroughTheBrokerAndNoPINTravels() async throws {
        let harness = try await DaemonHarness()
        let (broker, _) = try await Self.kiosk(
            Self.device, commands: ["access.next", "credentials.register", "credentials.list"], harness: harness)
        defer { broker.stop() }
        let site = try SiteHarness(directory: harness.directory)
        try await site.serve()
        defer { site.stop() }
        try await harness.start()
        defer { _ = harness.stop() }
        _ = try await harness.waitForStatus { $0["mqtt"]?["state"]?.string == "connected" }
        let results = "accessd/\(Self.device)/commands/result"
        let output = harness.directory + "/results.out"
        let subscriber = try broker.subscribe(results, id: "sub-admin", output: output)
        defer { subscriber.stop(grace: 1) }
        try await Task.sleep(for: .milliseconds(500))

        // The operator publishes under its own name: the site example's ACL allows no other.
        let commands = "accessd/\(Self.device)/commands/from/operator"
        let invitation = try site.invite("Lobby kiosk 7")
        try broker.publish(
            commands,
            #"{"jsonrpc":"2.0","id":"enrol-7","method":"credentials.register","params":{"url":"\#(invitation.url)"}}"#)
        // A PIN would sit in the broker: refused before anything runs.
        try broker.publish(
            commands,
            #"{"jsonrpc":"2.0","id":"pin","method":"credentials.register","params":{"url":"\#(invitation.url)","pin":"4938"}}"#
        )
        // Not listed: refused, naming what is.
        try broker.publish(commands, #"{"jsonrpc":"2.0","id":"del","method":"credentials.delete","params":{"id":"x"}}"#)
        var answers: [String: JSONValue] = [:]
        for _ in 0..<300 {
            for line in ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n") {
                guard let space = line.firstIndex(of: " "),
                    let answer = try? JSONValue.parse(String(line[line.index(after: space)...])),
                    let id = answer["id"]?.string
                else { continue }
                answers[id] = answer
            }
            if answers.count == 3 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        print(answers.values.map(\.jsonText).sorted().joined(separator: "\n"))
        let registered = try #require(answers["enrol-7"]?["result"], "\(answers)")
        let listed = try harness.connect().call("credentials.list").get()["credentials"]?.array ?? []
        #expect(listed.count == 1 && listed.first?["id"] == registered["id"], "\(listed)")
        #expect(answers["pin"]?["error"]?["message"]?.string?.contains("a PIN never goes over MQTT") == true)
        #expect(answers["del"]?["error"]?["code"] == -32601)
        #expect(answers["del"]?["error"]?["message"]?.string?.contains("credentials.register") == true)
        print(
            harness.log.split(separator: "\n").filter { $0.contains("MQTT command answered") }.joined(separator: "\n"))
        // Who sent each: the publisher the broker's ACL vouches for, in the answer and the journal.
        for answer in answers.values {
            #expect(answer["origin"] == ["via": "mqtt", "publisher": "operator"], "\(answer)")
        }
        #expect(
            harness.log.contains("MQTT command answered")
                && harness.log.contains("origin=mqtt publisher operator")
                && harness.log.contains("method=credentials.register"), "\(harness.log)")
    }

    /// `diagnostics.collect` from the broker (issue #34, item 4): the bundle on the kiosk's
    /// `diagnostics` topic, within the site example broker's message size limit, its answer saying
    /// where and how big; no secret in it (the kiosk's own client key planted as one).
    @Test func anAdministratorAsksAKioskForItsDiagnosticsBundle() async throws {
        let harness = try await DaemonHarness()
        let device = "kiosk-diagnose"
        let (broker, kiosk) = try await Self.kiosk(device, commands: ["diagnostics.collect"], harness: harness)
        defer { broker.stop() }
        try await harness.start()
        defer { _ = harness.stop() }
        _ = try await harness.waitForStatus { $0["mqtt"]?["state"]?.string == "connected" }
        let output = harness.directory + "/diagnostics.out"
        let subscriber = try broker.subscribe("accessd/\(device)/#", id: "sub-diagnose", output: output)
        defer { subscriber.stop(grace: 1) }
        try await Task.sleep(for: .milliseconds(500))

        let started = ContinuousClock.now
        try broker.publish(
            "accessd/\(device)/commands/from/operator",
            #"{"jsonrpc":"2.0","id":"diag-1","method":"diagnostics.collect"}"#)
        var answer: JSONValue?
        var bundleText: String?
        for _ in 0..<600 where answer == nil {
            try await Task.sleep(for: .milliseconds(100))
            for line in ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n") {
                guard let space = line.firstIndex(of: " ") else { continue }
                let topic = line[..<space]
                let payload = String(line[line.index(after: space)...])
                if topic == "accessd/\(device)/diagnostics" { bundleText = payload }
                if topic == "accessd/\(device)/commands/result" { answer = try? JSONValue.parse(payload) }
            }
        }
        let elapsed = ContinuousClock.now - started
        let result = try #require(answer?["result"], "\(String(describing: answer))")
        let text = try #require(bundleText, "the answer came without the bundle: \(result)")
        print("diagnostics over MQTT: \(text.utf8.count) bytes in \(elapsed); answer \(result.jsonText)")
        #expect(answer?["id"] == "diag-1")
        #expect(result["topic"] == .string("accessd/\(device)/diagnostics"))
        #expect(result["bytes"]?.int == Int64(text.utf8.count))
        #expect(text.utf8.count <= 65_536)
        let bundle = try JSONValue.parse(text)
        if case .object(let members) = bundle {
            print("accessd/\(device)/diagnostics: \(members.keys.sorted().joined(separator: ", "))")
            print("diagnose: \(bundle["diagnose"]?.jsonText ?? "")")
        }
        #expect(bundle["bundle"] == 1)
        #expect(bundle["status"]?["mqtt"]?["state"] == "connected", "\(bundle["status"]?.jsonText.prefix(500) ?? "")")
        #expect(bundle["diagnose"]?.array?.contains { $0["check"] == "socket" && $0["ok"] == true } == true)
        let settings = bundle["configuration"]?["settings"]?.array?.compactMap(\.string) ?? []
        #expect(settings.contains("commands = [\"diagnostics.collect\"]"), "\(settings)")
        // The kiosk's private key: its path may travel, its contents never.
        let key = try String(contentsOfFile: kiosk.key, encoding: .utf8)
        for line in key.split(separator: "\n") where !line.hasPrefix("-----") {
            #expect(!text.contains(line), "the bundle carries the client key")
        }
    }
}
