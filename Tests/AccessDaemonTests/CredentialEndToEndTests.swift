import AccessCore
import AccessJSON
import BlueZTestSupport
import ControlSocket
import Foundation
import SuiteTraits
import Testing

/// Credentials through the real chain: a real `readersim site serve` on loopback, the real
/// accessd, its socket, and `readersim site` commands changing the site's data.
@Suite("credentials end to end", .threadOfItsOwn, .timeLimit(.minutes(5)))
struct CredentialEndToEndTests {
    static let fastSync = "[site]\nsync_interval = 10\nrequest_timeout = 3\n[features]\nenabled = [\"aperio\"]\n"

    private func setUp(config: String = fastSync, siteArguments: [String] = []) async throws -> (
        DaemonHarness, SiteHarness
    ) {
        let harness = try await DaemonHarness(config: config)
        let site = try SiteHarness(directory: harness.directory)
        try await site.serve(extra: siteArguments)
        try await harness.start()
        return (harness, site)
    }

    /// Background syncs only after a registration (which starts one at once).
    static let slowSync = fastSync.replacingOccurrences(of: "sync_interval = 10", with: "sync_interval = 3600")

    /// Registers a credential and waits for the sync its registration starts, so that the
    /// test's own syncs count alone; returns its id.
    private func registerAndWaitForItsSync(_ harness: DaemonHarness, _ site: SiteHarness) async throws -> String {
        let client = try harness.connect()
        let registered = try client.call("credentials.register", ["url": .string(try site.invite("Ada").url)]).get()
        let id = try #require(registered["id"]?.string)
        for _ in 0..<1500 {  // 30 s
            let listed = try client.call("credentials.list").get()["credentials"]?.array ?? []
            if listed.first(where: { $0["id"] == .string(id) })?["lastSyncAt"]?.number != nil { return id }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestEnvironmentError("the registration's sync never ran")
    }

    /// A credential registered and the reader "Front door" heard in manual range (dbusmock:
    /// it connects at once and never resolves services).
    private func credentialAndFrontDoor(_ harness: DaemonHarness, _ site: SiteHarness) async throws {
        _ = try harness.connect().call("credentials.register", ["url": .string(try site.invite("Ada").url)]).get()
        _ = try await harness.waitForStatus { $0["isScanning"]?.bool == true && $0["usableCredentialCount"] == 1 }
        try await harness.mock.addDevice(DaemonHarness.readerAddress, alias: "Front door")
        try await harness.advertise(payload: DaemonEndToEndTests.payload, rssi: -90)
        _ = try await harness.waitForStatus { $0["readerCount"] == 1 }
    }

    private func failureCode(_ result: Result<JSONValue, RPCError>) -> String? {
        guard case .failure(let error) = result else { return nil }
        return error.data?["error"]?.string
    }

    /// Stopping while a link is being set up: the pending request is answered and accessd
    /// disconnects the reader itself (bluetoothd would keep the attempt going for nobody).
    @Test func stoppingDropsTheLinkBeingOpened() async throws {
        // A long step timeout: the exchange must still be waiting when accessd is stopped,
        // however slow the machine (its connect limit is twice the step timeout).
        let (harness, site) = try await setUp(config: Self.fastSync + "[access]\nstep_timeout = 60\n")
        defer { site.stop() }
        try await credentialAndFrontDoor(harness, site)
        // The mock connects at once but never resolves services: the exchange waits there.
        let request = taskOnThreadOfItsOwn { try harness.connect().call("access.request", ["reader": "2A01"]) }
        #expect(try await harness.waitForCall("Connect", on: DaemonHarness.readerPath))
        #expect(try await !harness.mock.calls(DaemonHarness.readerPath).contains("Disconnect"))
        #expect(harness.stop() == 0)
        #expect(failureCode(try await request.value) == "shuttingDown")
        #expect(try await harness.mock.calls(DaemonHarness.readerPath).contains("Disconnect"), "\(harness.log)")
    }

    /// Through the real binaries: `accessctl access` with a typo lists the readers heard (by
    /// name), and one stuck where BlueZ never resolves services says so when its time is up.
    @Test func accessctlSaysWhyAnAccessFailed() async throws {
        let (harness, site) = try await setUp(
            config: Self.fastSync + "[access]\nstep_timeout = 60\nmanual_timeout = 2\n")
        defer { site.stop() }
        try await credentialAndFrontDoor(harness, site)
        let typo = try runCommand(
            [AccessctlTests.accessctl, "access", "2A1", "--socket", harness.socketPath], mergingErrors: true)
        #expect(typo.status == 1)
        #expect(
            typo.output
                == "accessctl: refused: reader 000002A1 is not heard; heard now: 00002A01 (Front door) (readerUnavailable)\n",
            "\(typo.output)")
        let stuck = try runCommand(
            [AccessctlTests.accessctl, "access", "2A01", "--socket", harness.socketPath], mergingErrors: true)
        #expect(stuck.status == 1)
        #expect(
            stuck.output.hasPrefix("accessctl: access failed: timeout while resolving the reader's services after 2"),
            "\(stuck.output)")
        #expect(harness.log.contains("manual request failed"), "logged too")
        // In stable names, not a Swift value (issue #35: "outcome=failed(AccessCore.ExchangeFailure.timedOut)").
        #expect(harness.stop() == 0)
        let ended = harness.log.split(separator: "\n").first { $0.contains("exchange ended") } ?? ""
        #expect(ended.contains("outcome=failed") && ended.contains("error=timeout"), "\(harness.log)")
        #expect(!harness.log.contains("AccessCore."), "\(harness.log)")
    }

    /// Issue #35: two PINs that differ at registration aborted it (exit 64, and the top
    /// level's usage); now they are asked for again, on a terminal (a pty through script(1)).
    @Test func twoPINsThatDifferAreAskedForAgain() async throws {
        let (harness, site) = try await setUp()
        defer { site.stop() }
        let fifo = harness.directory + "/keyboard"
        let out = harness.directory + "/screen"
        #expect(mkfifo(fifo, 0o600) == 0)
        let keyboard = open(fifo, O_RDWR)
        defer { close(keyboard) }
        let url = try site.invite("Ada", secondFactor: true).url
        let session = try ChildProcess([
            "/bin/sh", "-c",
            "exec /usr/bin/script -qec \"'\(AccessctlTests.accessctl)' credentials register '\(url)' --socket '\(harness.socketPath)'\" /dev/null < '\(fifo)' > '\(out)' 2>&1",
        ])
        func type(_ line: String) { _ = (line + "\n").withCString { write(keyboard, $0, strlen($0)) } }
        // Asked only once the site said it wants a second factor.
        _ = try await waitForText("The site asks for a second factor: set this credential's PIN.", in: out)
        _ = try await waitForText("(4-12 digits): ", in: out)
        type("482916")
        _ = try await waitForText("PIN again: ", in: out)
        type("482917")
        _ = try await waitForText("the two PINs differ; again", in: out)
        for _ in 0..<50 {
            let screen = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            if screen.components(separatedBy: "(4-12 digits): ").count == 3 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        type("482916")
        try await Task.sleep(for: .milliseconds(300))
        type("482916")
        #expect(try await taskOnThreadOfItsOwn { session.waitForExit(timeout: readinessCeiling) }.value == 0)
        let screen = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        let listed = try harness.connect().call("credentials.list").get()["credentials"]?.array ?? []
        #expect(listed.count == 1, "\(screen)")
        #expect(listed.first?["secondFactor"]?["pinSet"] == true, "\(listed)")
        print("$ accessctl credentials register URL\n" + screen.replacingOccurrences(of: "\r", with: ""))
        #expect(harness.stop() == 0)
    }

    /// Issue #35: `--no-pin` on a second-factor invitation exited 0 and left a credential that
    /// could never get a PIN, and every registration asked for a PIN before the site said
    /// whether it wanted one. Now the site refuses such a registration and keeps the
    /// invitation; accessctl asks for a PIN only then, and without a terminal says how.
    @Test func aSecondFactorInvitationIsNeverUsedWithoutAPIN() async throws {
        let (harness, site) = try await setUp()
        defer { site.stop() }
        let url = try site.invite("Ada", secondFactor: true).url
        func register(_ extra: [String], input: String? = nil) throws -> CommandResult {
            // setsid: no controlling terminal, as under cron or Ansible.
            try runCommand(
                ["/usr/bin/setsid", "-w", AccessctlTests.accessctl, "credentials", "register", url]
                    + extra + ["--socket", harness.socketPath], input: input, mergingErrors: true)
        }
        let noPin = try register(["--no-pin"])
        #expect(noPin.status == 1, "\(noPin.output)")
        #expect(noPin.output.contains("this invitation needs a PIN; run without --no-pin"), "\(noPin.output)")
        let noTerminal = try register([])
        #expect(noTerminal.status == 1, "\(noTerminal.output)")
        #expect(
            noTerminal.output.contains("give the PIN on standard input with --pin-stdin"), "\(noTerminal.output)")
        #expect(try harness.connect().call("credentials.list").get()["credentials"]?.array?.isEmpty == true)
        // The invitation was kept: it registers with a PIN.
        let withPin = try register(["--pin-stdin"], input: "482916\n")
        #expect(withPin.status == 0, "\(withPin.output)")
        let listed = try harness.connect().call("credentials.list").get()["credentials"]?.array ?? []
        #expect(listed.first?["secondFactor"]?["pinSet"] == true, "\(listed)")
        // An invitation without a second factor registers with no PIN asked, terminal or not.
        let plain = try runCommand(
            [
                "/usr/bin/setsid", "-w", AccessctlTests.accessctl, "credentials", "register",
                try site.invite("Bob").url, "--replace", "--socket", harness.socketPath,
            ], mergingErrors: true)
        #expect(plain.status == 0 && plain.output.contains("registered "), "\(plain.output)")
        #expect(harness.stop() == 0)
    }

    @Test func registersByURLAndByHostAndCode() async throws {
        let (harness, site) = try await setUp()
        defer { site.stop() }
        let client = try harness.connect()
        let watcher = try harness.connect()
        _ = try watcher.call("events.subscribe", ["kinds": ["credentials.changed", "sdk.state"]])

        let first = try site.invite("Ada Lovelace")
        let registered = try client.call("credentials.register", ["url": .string(first.url), "deviceName": "kiosk-1"])
            .get()
        #expect(registered["cardholderName"] == "Ada Lovelace")
        #expect(registered["siteName"] == "Test site")
        #expect(registered["site"] == "5117E001")
        #expect(registered["state"] == "active")
        #expect(registered["deviceName"] == "kiosk-1")
        let event = try #require(try waitForEvent(watcher) { $0["params"]?["kind"] == "credentials.changed" })
        #expect(event["params"]?["data"]?["reason"] == "registered")
        // The key's fingerprint, as the site shows the key it holds (docs/site-api.md §3.1).
        let fingerprint = try #require(registered["fingerprint"]?.string)
        let held = try site.run(["credentials"]).split(separator: "\n").map { try JSONValue.parse(String($0)) }
        #expect(held.first?["fingerprint"]?.string == fingerprint, "\(held)")
        #expect(event["params"]?["data"]?["fingerprint"]?.string == fingerprint)
        let listedFirst = try client.call("credentials.list").get()["credentials"]?.array?.first
        #expect(listedFirst?["fingerprint"]?.string == fingerprint)
        // The SDK state no longer says there is no credential.
        _ = try await harness.waitForStatus { $0["states"]?.array?.contains("errorNoCredentials") == false }

        // A host (with its scheme, as it is plain HTTP on loopback) and a typed code. One
        // credential per site: refused before the site is asked (issue #13), so the invitation
        // stays unused; with replace the first one goes, and its site is told.
        let second = try site.invite("Grace Hopper")
        let typed = second.code.lowercased()
        let refused = try client.call("credentials.register", ["host": .string(site.url), "code": .string(typed)])
        #expect(failureCode(refused) == "credential.exists")
        let byCode = try client.call(
            "credentials.register", ["host": .string(site.url), "code": .string(typed), "replace": true]
        ).get()
        #expect(byCode["cardholderName"] == "Grace Hopper")

        let listed = try client.call("credentials.list").get()["credentials"]?.array ?? []
        #expect(listed.map { $0["cardholderName"] } == ["Grace Hopper"])
        #expect(try harness.connect().call("status.get").get()["credentialCount"] == 1)
        // The site saw both devices, and was told the first one went.
        let onSite = try site.run(["credentials"]).split(separator: "\n").map { try JSONValue.parse(String($0)) }
        #expect(onSite.count == 2)
        #expect(onSite.first { $0["cardholderName"] == "Ada Lovelace" }?["deleted"] == true, "\(onSite)")
        _ = try #require(try waitForEvent(watcher) { $0["params"]?["data"]?["replacedBy"] == byCode["id"] })
        // Kept across a restart.
        #expect(harness.stop() == 0)
        try await harness.start()
        #expect(try harness.connect().call("credentials.list").get()["credentials"]?.array?.count == 1)
        #expect(harness.stop() == 0)
    }

    @Test func refusesBadInvitationsAndStoresNothing() async throws {
        let (harness, site) = try await setUp()
        defer { site.stop() }
        let client = try harness.connect()
        let used = try site.invite("Ada")
        _ = try client.call("credentials.register", ["url": .string(used.url)]).get()

        // (With replace: a credential for this site is held, and the site's refusals are the point.)
        #expect(
            failureCode(try client.call("credentials.register", ["url": .string(used.url), "replace": true]))
                == "invitation.used")
        let unknown = site.url + "/v1/invitations/0000000000000000"
        #expect(
            failureCode(try client.call("credentials.register", ["url": .string(unknown), "replace": true]))
                == "invitation.unknown")
        let expired = try site.invite("Late", expiresIn: -1)
        #expect(
            failureCode(try client.call("credentials.register", ["url": .string(expired.url), "replace": true]))
                == "invitation.expired")
        // Refused locally, before any call.
        #expect(
            failureCode(try client.call("credentials.register", ["host": .string(site.url), "code": "SHORT"]))
                == "invitation.malformed")
        #expect(
            failureCode(
                try client.call(
                    "credentials.register",
                    ["url": "http://192.0.2.1/v1/invitations/0000000000000000"])) == "site.insecureTransport")
        #expect(
            failureCode(try client.call("credentials.register", ["url": "ftp://x/v1/invitations/0000000000000000"]))
                == "invitation.malformedURL")
        // A bare code (read out over the phone) is told to come with its site.
        let bare = try client.call("credentials.register", ["url": "0123456789ABCDEF"])
        guard case .failure(let bareError) = bare else {
            Issue.record("a bare code was accepted")
            return
        }
        #expect(bareError.message.contains("--host SITE --code 0123456789ABCDEF"), "\(bareError.message)")
        // Nothing listening: one sentence, not a library's error.
        let closed = try client.call(
            "credentials.register", ["url": "http://127.0.0.1:9/v1/invitations/0000000000000000"])
        guard case .failure(let closedError) = closed else {
            Issue.record("a closed port answered")
            return
        }
        #expect(
            closedError.message
                == "the site cannot be reached: nothing accepts connections at 127.0.0.1:9 (connection refused)",
            "\(closedError.message)")
        if case .success = try client.call("credentials.register", ["url": .string(used.url), "pin": "12"]) {
            Issue.record("a two-digit PIN was accepted")
        }
        #expect(try client.call("credentials.list").get()["credentials"]?.array?.count == 1)
        #expect(harness.stop() == 0)
    }

    /// A second-factor invitation without a PIN is refused by the site and kept (it left a
    /// credential that could never get a PIN: issue #35); with one the site gets the key.
    @Test func secondFactorOnlyWithAPIN() async throws {
        let (harness, site) = try await setUp()
        defer { site.stop() }
        let client = try harness.connect()
        let invitation = try site.invite("With PIN", secondFactor: true)
        guard case .failure(let refused) = try client.call("credentials.register", ["url": .string(invitation.url)])
        else {
            Issue.record("a second-factor invitation was registered without a PIN")
            return
        }
        #expect(refused.data?["error"] == "invitation.secondFactorRequired")
        #expect(try client.call("credentials.list").get()["credentials"]?.array?.isEmpty == true)
        let sealed = try client.call("credentials.register", ["url": .string(invitation.url), "pin": "482916"]).get()
        #expect(sealed["secondFactor"]?["pinSet"] == true)
        let onSite = try site.run(["credentials"]).split(separator: "\n").map { try JSONValue.parse(String($0)) }
        #expect(onSite.count == 1 && onSite.first?["secondFactorKeySet"] == true, "\(onSite)")
        #expect(harness.stop() == 0)
    }

    @Test func suspensionRevocationAndItemsFollowTheSite() async throws {
        // No background sync until the revocation: the counts below are those of the syncs
        // the test asks for (on a loaded machine the site commands between two of them took
        // longer than a 10 s interval, and a background sync took the first item). Nor the
        // site's change channel (RevocationLatencyTests), which would sync each change at once.
        let (harness, site) = try await setUp(config: Self.slowSync, siteArguments: ["--no-changes"])
        defer { site.stop() }
        let client = try harness.connect()
        let id = try await registerAndWaitForItsSync(harness, site)

        // Items: added, then updated and removed, across syncs.
        let lock = try JSONValue.parse(
            try site.run([
                "item", "add", "--credential", id, "--type", "aperio",
                "--name", "Store room", "--id", "lock-1",
            ]))
        #expect(lock["id"] == "lock-1")
        try site.run(["item", "add", "--credential", id, "--type", "salto", "--name", "Locker", "--id", "salto-1"])
        var sync = try client.call("items.sync").get()
        #expect(sync["credentials"]?.array?.first?["added"] == 2)
        var listed = try client.call("items.list").get()["items"]?.array ?? []
        #expect(Set(listed.compactMap { $0["id"]?.string }) == ["lock-1", "salto-1"])
        #expect(listed.first { $0["id"] == "lock-1" }?["site"] == "5117E001")

        try site.run(["item", "update", "lock-1", "--name", "Store room (east)"])
        try site.run(["item", "remove", "salto-1"])
        sync = try client.call("items.sync").get()
        #expect(sync["credentials"]?.array?.first?["updated"] == 1)
        #expect(sync["credentials"]?.array?.first?["removed"] == 1)
        listed = try client.call("items.list").get()["items"]?.array ?? []
        #expect(listed.map { $0["name"] } == ["Store room (east)"])

        // Suspended: taken out of use at the next sync; resumed: back.
        try site.run(["suspend", id])
        _ = try client.call("items.sync").get()
        #expect(try client.call("credentials.list").get()["credentials"]?.array?.first?["state"] == "suspended")
        _ = try await harness.waitForStatus { $0["states"]?.array?.contains("errorNoCredentials") == true }
        try site.run(["resume", id])
        _ = try client.call("items.sync").get()
        _ = try await harness.waitForStatus { $0["states"]?.array?.contains("errorNoCredentials") == false }
        // Revoked: for good; the background sync (every 10 s from here) finds it without
        // being asked.
        #expect(harness.stop() == 0)
        try harness.writeConfig(Self.fastSync)
        try await harness.start()
        let watcher = try harness.connect()
        _ = try watcher.call("events.subscribe", ["kinds": ["credentials.changed"]])
        try site.run(["revoke", id])
        let revoked = try #require(
            try waitForEvent(watcher, timeout: readinessCeiling) {
                $0["params"]?["data"]?["reason"] == "state" && $0["params"]?["data"]?["state"] == "revoked"
            })
        #expect(revoked["params"]?["data"]?["id"] == .string(id))
        #expect(harness.stop() == 0)
    }

    /// Syncs asked for at once take turns: each answers, and the one item is counted once.
    @Test func concurrentSyncsTakeTurns() async throws {
        let (harness, site) = try await setUp(config: Self.slowSync, siteArguments: ["--no-changes"])
        defer { site.stop() }
        let id = try await registerAndWaitForItsSync(harness, site)
        try site.run(["item", "add", "--credential", id, "--type", "aperio", "--name", "Lock", "--id", "lock-1"])
        let syncs = (0..<4).map { _ in taskOnThreadOfItsOwn { try harness.connect().call("items.sync").get() } }
        var added: Int64 = 0
        for sync in syncs {
            let answer = try await sync.value
            added += answer["credentials"]?.array?.first?["added"]?.int ?? 0
        }
        #expect(added == 1)
        #expect(harness.stop() == 0)
    }

    @Test func deletionInformsTheSiteWhenItCan() async throws {
        let (harness, site) = try await setUp()
        let client = try harness.connect()
        // One credential per site at a time: registered and deleted in turn.
        let a = try client.call("credentials.register", ["url": .string(try site.invite("A").url)]).get()["id"]?.string
        let deleted = try client.call("credentials.delete", ["id": .string(try #require(a))]).get()
        #expect(deleted["deleted"] == true)
        #expect(deleted["siteInformed"] == true)
        #expect(try site.run(["credentials"]).contains("\"deleted\":true"))
        // offlineOnly: the site is not even asked.
        let c = try #require(
            try client.call("credentials.register", ["url": .string(try site.invite("C").url)]).get()["id"]?.string)
        let local = try client.call("credentials.delete", ["id": .string(c), "option": "offlineOnly"]).get()
        #expect(local["deleted"] == true && local["siteError"] == "notAsked")
        let b = try client.call("credentials.register", ["url": .string(try site.invite("B").url)]).get()["id"]?.string
        // The site is down. By default (the SDK's DeleteOption.default) nothing is deleted: the
        // site would keep a live credential nobody holds.
        site.stop()
        #expect(
            failureCode(try client.call("credentials.delete", ["id": .string(try #require(b))])) == "site.unreachable")
        let refused = try runCommand(
            [AccessctlTests.accessctl, "credentials", "delete", try #require(b), "--socket", harness.socketPath],
            mergingErrors: true)
        #expect(
            refused.status == 1 && refused.output.contains("not deleted: the site cannot be reached"),
            "\(refused.output)")
        #expect(try client.call("credentials.list").get()["credentials"]?.array?.count == 1)
        // allowOffline: deleted here anyway, and the answer says the site was not told.
        let offline = try runCommand([
            AccessctlTests.accessctl, "credentials", "delete", try #require(b), "--allow-offline",
            "--json", "--socket", harness.socketPath,
        ])
        let answer = try JSONValue.parse(offline.output)
        #expect(
            answer["deleted"] == true && answer["siteInformed"] == false && answer["siteError"] == "site.unreachable",
            "\(offline.output)")
        #expect(try client.call("credentials.list").get()["credentials"]?.array?.isEmpty == true)
        #expect(failureCode(try client.call("credentials.delete", ["id": "ffff"])) == "credential.unknown")
        #expect(harness.stop() == 0)
    }

    @Test func siteDownGarbageOrSlowIsReportedAndRetried() async throws {
        // The syncs here are the test's own (the change channel would add its own).
        let (harness, site) = try await setUp(siteArguments: ["--no-changes"])
        let client = try harness.connect()
        let watcher = try harness.connect()
        _ = try watcher.call("events.subscribe", ["kinds": ["feature.state"]])
        let id = try #require(
            try client.call("credentials.register", ["url": .string(try site.invite("A").url)]).get()["id"]?.string)
        try site.run(["item", "add", "--credential", id, "--type", "aperio", "--name", "Lock", "--id", "lock-1"])
        _ = try client.call("items.sync").get()
        let port = try #require(site.url.split(separator: ":").last.map(String.init))

        // Down: the feature state says so, with the retry delay; nothing held is lost.
        site.stop()
        // The first call may go out on the connection the site kept alive and closed as it
        // stopped ("closed the connection before answering"); the next finds nothing listening.
        _ = try client.call("items.sync").get()
        let down = try client.call("items.sync").get()
        #expect(down["credentials"]?.array?.first?["error"] == "site.unreachable")
        let failed = try #require(try waitForEvent(watcher) { $0["params"]?["data"]?["state"] == "failed" })
        #expect(failed["params"]?["data"]?["feature"] == "cloudConnection")
        #expect(failed["params"]?["data"]?["retryInSeconds"] == 5)
        #expect(try client.call("items.list").get()["items"]?.array?.count == 1)
        _ = try await harness.waitForStatus { $0["featureErrors"]?.array?.contains("cloudConnection") == true }
        // What a person reads: status names the failing feature, diagnose the reason and fix.
        let status = try runCommand([AccessctlTests.accessctl, "status", "--socket", harness.socketPath])
        #expect(status.output.contains("  features:          failing: cloudConnection"), "\(status.output)")
        let diagnose = try runCommand(
            [AccessctlTests.accessctl, "diagnose", "--socket", harness.socketPath], environment: ["LC_ALL": "C.UTF-8"])
        let siteLine =
            status.status == 0 ? diagnose.output.split(separator: "\n").first { $0.contains("  site  ") } : nil
        #expect(siteLine?.hasPrefix("FAIL") == true, "\(diagnose.output)")
        #expect(
            siteLine?.contains("nothing accepts connections at 127.0.0.1:\(port) (connection refused)") == true,
            "\(diagnose.output)")
        #expect(siteLine?.contains("→ check the network and the site's address") == true, "\(diagnose.output)")

        // Garbage on the same port.
        try await restartOnPort(site, port: port, fault: "garbage")
        let garbage = try client.call("items.sync").get()
        #expect(
            garbage["credentials"]?.array?.first?["error"] == "site.malformedAnswer"
                || garbage["credentials"]?.array?.first?["error"] == "site.unreachable")
        // Hanging: the call times out after request_timeout (3 s here), the daemon answers others meanwhile.
        try await restartOnPort(site, port: port, fault: "hang")
        let started = ContinuousClock.now
        let slow = taskOnThreadOfItsOwn { try harness.connect().call("items.sync").get() }
        try await Task.sleep(for: .milliseconds(300))
        #expect(try harness.connect().call("status.get").get()["version"] != nil)
        let hung = try await slow.value
        #expect(hung["credentials"]?.array?.first?["error"] == "site.timeout")
        #expect(ContinuousClock.now - started < .seconds(20))
        // Back: the next sync recovers, the feature state says ok.
        try await restartOnPort(site, port: port, fault: nil)
        let back = try client.call("items.sync").get()
        #expect(back["credentials"]?.array?.first?["error"] == nil)
        _ = try #require(try waitForEvent(watcher) { $0["params"]?["data"]?["state"] == "ok" })
        #expect(try client.call("items.list").get()["items"]?.array?.count == 1)
        site.stop()
        #expect(harness.stop() == 0)
    }

    private func restartOnPort(_ site: SiteHarness, port: String, fault: String?) async throws {
        site.stop()
        try await site.serveOn(port: port, fault: fault)
    }

    @Test func secretsNeverAppearInAnyOutput() async throws {
        let (harness, site) = try await setUp()
        defer { site.stop() }
        let client = try harness.connect()
        let id = try #require(
            try client.call(
                "credentials.register",
                ["url": .string(try site.invite("Ada", secondFactor: true).url), "pin": "482916"]
            ).get()["id"]?.string)
        try site.run(["item", "add", "--credential", id, "--type", "aperio", "--name", "Lock", "--id", "lock-1"])
        _ = try client.call("items.sync").get()
        // The secrets, as they sit in the database: the credential key, the Aperio key.
        let secrets = try harness.secretsInStore()
        #expect(secrets.count >= 2)
        let everything = [
            try client.call("credentials.list").get().jsonText,
            try client.call("items.list").get().jsonText,
            try client.call("status.get").get().jsonText,
            harness.log,
            try harness.journalText(),
        ].joined(separator: "\n")
        for secret in secrets {
            #expect(!everything.contains(secret.hex), "secret found as hex")
            #expect(!everything.contains(secret.base64), "secret found as base64")
        }
        #expect(!everything.contains("482916"))
        // At rest: the state directory 0700, the database files 0600.
        #expect(try harness.mode(of: harness.stateDirectory) == 0o700)
        #expect(try harness.mode(of: harness.stateDirectory + "/accessd.sqlite") == 0o600)
        #expect(harness.stop() == 0)
    }
}

/// HTTPS to a site with its own CA: trusted through `[site] ca_file`, refused without it.
@Suite("credentials over TLS", .threadOfItsOwn, .timeLimit(.minutes(5)))
struct CredentialTLSTests {
    @Test func customCAIsTrustedOnlyWhenConfigured() async throws {
        let probe = try await DaemonHarness()
        let pki = try TestPKI(directory: probe.directory + "/pki")
        let site = try SiteHarness(directory: probe.directory)
        try await site.serve(extra: ["--tls-cert", pki.serverCertificate, "--tls-key", pki.serverKey])
        defer { site.stop() }
        #expect(site.url.hasPrefix("https://"))

        try probe.writeConfig("[site]\nca_file = \"\(pki.caCertificate)\"\nrequest_timeout = 5\n")
        try await probe.start()
        let trusted = try probe.connect().call("credentials.register", ["url": .string(try site.invite("Ada").url)])
        #expect(try trusted.get()["cardholderName"] == "Ada")
        #expect(probe.stop() == 0)

        // The same site, with the system's CAs only: refused, nothing stored.
        let untrusting = try await DaemonHarness(config: "[site]\nrequest_timeout = 5\n")
        try await untrusting.start()
        let refused = try untrusting.connect().call(
            "credentials.register", ["url": .string(try site.invite("Bob").url)])
        guard case .failure(let error) = refused else {
            Issue.record("a certificate from an unknown CA was accepted")
            return
        }
        #expect(error.data?["error"] == "site.unreachable")
        #expect(
            error.message
                == "the site cannot be reached: the certificate of 127.0.0.1:\(site.port) is not trusted "
                + "(CERTIFICATE_VERIFY_FAILED): set [site] ca_file to the site's CA certificate", "\(error.message)")
        #expect(try untrusting.connect().call("credentials.list").get()["credentials"]?.array?.isEmpty == true)
        #expect(untrusting.stop() == 0)
    }
}

/// A throwaway CA and a server certificate for 127.0.0.1, made with the openssl tool; client
/// certificates on demand.
struct TestPKI {
    let directory: String
    let caCertificate: String
    let serverCertificate: String
    let serverKey: String
    private var caKey: String { directory + "/ca.key" }

    init(directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.directory = directory
        caCertificate = directory + "/ca.pem"
        serverCertificate = directory + "/server.pem"
        serverKey = directory + "/server.key"
        let ca = directory + "/ca.key"
        let request = directory + "/server.csr"
        let extensions = directory + "/ext.cnf"
        try "subjectAltName = IP:127.0.0.1\nbasicConstraints = CA:FALSE\n".write(
            toFile: extensions, atomically: true, encoding: .utf8)
        try Self.openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", ca,
            "-out", caCertificate, "-days", "2", "-subj", "/CN=accessd test CA",
        ])
        try Self.openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", serverKey,
            "-out", request, "-subj", "/CN=127.0.0.1",
        ])
        try Self.openssl([
            "x509", "-req", "-in", request, "-CA", caCertificate, "-CAkey", ca, "-CAcreateserial",
            "-out", serverCertificate, "-days", "2", "-extfile", extensions,
        ])
    }

    /// A client certificate whose common name is `commonName` (a broker's user name with
    /// `use_identity_as_username`), and its key.
    func client(_ commonName: String) throws -> (certificate: String, key: String) {
        let certificate = directory + "/\(commonName).pem"
        let key = directory + "/\(commonName).key"
        let request = directory + "/\(commonName).csr"
        try Self.openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", request,
            "-subj", "/CN=\(commonName)",
        ])
        try Self.openssl([
            "x509", "-req", "-in", request, "-CA", caCertificate, "-CAkey", caKey, "-CAcreateserial",
            "-out", certificate, "-days", "2",
        ])
        return (certificate, key)
    }

    private static func openssl(_ arguments: [String]) throws {
        guard try runCommand(["/usr/bin/openssl"] + arguments).status == 0 else {
            throw TestEnvironmentError("openssl \(arguments.prefix(2).joined(separator: " ")) failed")
        }
    }
}
