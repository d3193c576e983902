import AccessCore
import AccessDaemon
import AccessJSON
import AccessStore
import Crypto
import Foundation
import SiteContract
import SuiteTraits
import Testing

/// `SiteClient` against a site that answers whatever the test scripts: the shared
/// `SiteContract` messages on the wire, and what a broken or hostile site cannot do to it.
@Suite(.threadOfItsOwn, .timeLimit(.minutes(5)))
struct SiteClientTests {
    let siteKey = P256.Signing.PrivateKey()
    let credentialKey = P256.Signing.PrivateKey()
    let credentialID = CredentialID("4b1f0d3e-2a01-4c6e-9d8b-0123456789ab")!

    private func withSite<T>(
        _ answers: [ScriptedSite.Answer],
        _ body: (SiteClient, SiteAddress, ScriptedSite) async throws -> T
    ) async throws -> T {
        let site = try await ScriptedSite(answers: answers)
        let client = try SiteClient(caFile: nil, timeout: .seconds(5))
        do {
            let result = try await body(client, try SiteAddress.parseHost("http://127.0.0.1:\(site.port)"), site)
            await client.shutdown()
            await site.stop()
            return result
        } catch {
            await client.shutdown()
            await site.stop()
            throw error
        }
    }

    private func register(_ client: SiteClient, _ address: SiteAddress) async throws(SiteError)
        -> SiteClient.Registration
    {
        try await client.register(
            site: address, code: try! InvitationCode("ABCD-EFGH-JKMN-PQRS"), deviceName: "kiosk",
            credentialKey: credentialKey.publicKey, secondFactorKey: nil)
    }

    private func stored(siteURL: String) -> StoredCredential {
        let credential = Credential(
            id: credentialID, siteTag: SiteTag(0x2A), cardholderName: "Ada Lovelace",
            kind: .mobile, state: .active, sitePublicKey: siteKey.publicKey,
            signingKey: credentialKey, sealedSecondFactor: nil, secondFactorEnabled: false)
        return StoredCredential(
            credential: credential, siteName: "Head office", siteURL: siteURL,
            deviceName: "kiosk", registeredAt: 0)
    }

    private func json(_ message: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try! encoder.encode(message), as: UTF8.self)
    }

    private var registrationAnswer: ScriptedSite.Answer {
        .init(
            status: 201,
            body: json(
                RegistrationAnswer(
                    credential: CredentialStatusAnswer(
                        id: credentialID.description, state: .active,
                        cardholderName: "Ada Lovelace", secondFactor: false),
                    site: SiteDescription(
                        name: "Head office", tag: "0000002a", publicKey: SiteText.base64(siteKey.publicKey)))))
    }

    @Test func registrationSendsTheSharedRequestAndReadsTheSharedAnswer() async throws {
        let registration = try await withSite([registrationAnswer]) { client, address, site in
            let registration = try await register(client, address)
            let sent = try JSONDecoder().decode(RegistrationRequest.self, from: Data(site.requests[0].body.utf8))
            #expect(
                sent
                    == RegistrationRequest(
                        deviceName: "kiosk", credentialKey: SiteText.base64(credentialKey.publicKey),
                        secondFactorKey: nil))
            #expect(!site.requests[0].body.contains("secondFactorKey"), "an absent key is left out, not null")
            return registration
        }
        #expect(registration.credentialID == credentialID)
        #expect(registration.siteTag == SiteTag(0x2A))
        #expect(registration.sitePublicKey.x963Representation == siteKey.publicKey.x963Representation)
    }

    /// docs/site-api.md §4.2's example: content fields beside the common ones.
    @Test func anItemIsFlatOnTheWire() throws {
        let item = SiteItem(
            id: "salto-77", type: "salto", name: "Locker 12", state: .active,
            content: SiteItemContent(data: ["keyId": "77"]))
        #expect(
            json(item) == #"{"data":{"keyId":"77"},"id":"salto-77","name":"Locker 12","state":"active","type":"salto"}"#
        )
        #expect(try JSONDecoder().decode(SiteItem.self, from: Data(json(item).utf8)) == item)
    }

    @Test func itemsOfEachTypeAreStored() async throws {
        let page = ItemPageAnswer(
            cursor: "17",
            items: [
                SiteItem(
                    id: "aperio-1", type: "aperio", name: "Store room lock", state: .active,
                    content: SiteItemContent(
                        siteTag: "0000002a",
                        aperio: AperioFields(
                            identifier: "a1b2c3d4e5f60718",
                            key: Base64.encode([UInt8](repeating: 7, count: 32))))),
                SiteItem(
                    id: "salto-77", type: "salto", name: "Locker 12", state: .suspended,
                    content: SiteItemContent(data: ["keyId": "77", "path": "a/b"])),
            ], removed: ["aperio-0"], more: true)
        let answer = try await withSite([.init(status: 200, body: json(page))]) { client, address, _ in
            try await client.items(of: stored(siteURL: address.description), after: "0")
        }
        #expect(answer.cursor == "17" && answer.more && answer.removed == ["aperio-0"])
        #expect(answer.items[0].aperioIdentifier == [0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6, 0x07, 0x18])
        #expect(answer.items[0].siteTag == SiteTag(0x2A))
        #expect(answer.items[1].state == .suspended)
        #expect(answer.items[1].data == #"{"keyId":"77","path":"a/b"}"#)
    }

    /// docs/site-api.md §4.2: data nested deeper than 16 is refused, so a site cannot make
    /// every later `items.list` slow (issue #17: 480 deep took 8.6 s).
    @Test func deeplyNestedItemDataIsRefused() async throws {
        func nested(_ depth: Int) -> String {
            String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
        }
        func page(_ depth: Int) -> ScriptedSite.Answer {
            .init(
                status: 200,
                body:
                    #"{"cursor":"1","removed":[],"items":[{"id":"s","type":"salto","name":"n","state":"active","data":"#
                    + nested(depth) + "}]}")
        }
        let accepted = try await withSite([page(16)]) { client, address, _ in
            try await client.items(of: stored(siteURL: address.description), after: "0")
        }
        #expect(accepted.items.count == 1)
        await #expect(throws: SiteError.self) {
            try await withSite([page(17)]) { client, address, _ in
                try await client.items(of: stored(siteURL: address.description), after: "0")
            }
        }
    }

    /// docs/site-api.md §4.2: withdrawn certificate serials are decimal u64s, at most 1,024;
    /// anything else refuses the whole page, so a site cannot make accessd keep garbage.
    @Test func withdrawnCertificatesAreBoundedDecimalSerials() async throws {
        func page(_ serials: [String]) -> ScriptedSite.Answer {
            .init(
                status: 200,
                body: json(
                    ItemPageAnswer(
                        cursor: "1", items: [], removed: [], more: false, withdrawnCertificates: serials)))
        }
        let accepted = try await withSite([page(["7", "18446744073709551615", "7"])]) { client, address, _ in
            try await client.items(of: stored(siteURL: address.description), after: "0")
        }
        #expect(accepted.withdrawnCertificates == [7, UInt64.max])
        for refused in [["-1"], ["18446744073709551616"], ["0x10"], [" 7"], [""], (0...1_024).map(String.init)] {
            let error = await #expect(throws: SiteError.self) {
                try await withSite([page(refused)]) { client, address, _ in
                    try await client.items(of: stored(siteURL: address.description), after: "0")
                }
            }
            #expect({ if case .malformedAnswer? = error { true } else { false } }(), "\(refused.prefix(2))")
        }
    }

    /// Issue #17: a body dribbled a byte at a time kept a call open past 90 s with a 5 s
    /// timeout (the deadline covered the head only). The whole call now ends at the timeout.
    @Test func aDribbledAnswerEndsAtTheTimeout() async throws {
        let slow = ScriptedSite.Answer(
            status: 200, body: #"{"state":"active","secondFactor":false}"# + String(repeating: " ", count: 600),
            dribble: .milliseconds(100))
        let started = ContinuousClock.now
        let error = await #expect(throws: SiteError.self) {
            try await withSite([slow]) { client, address, _ in
                try await client.status(of: stored(siteURL: address.description))
            }
        }
        #expect({ if case .timedOut? = error { true } else { false } }(), "\(String(describing: error))")
        let took = ContinuousClock.now - started
        // The body alone takes a minute to arrive; the call ends at its 5 s timeout.
        #expect(took < .seconds(20), "took \(took)")
    }

    /// Issue #17: deep text is refused before the decoder spends milliseconds per level on it.
    @Test func anAnswerNestedDeeperThan32IsRefusedBeforeDecoding() async throws {
        let deep = String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000)
        let error = await #expect(throws: SiteError.self) {
            try await withSite([.init(status: 200, body: deep)]) { client, address, _ in
                try await client.status(of: stored(siteURL: address.description))
            }
        }
        #expect(
            { if case .malformedAnswer("nested deeper than 32 levels")? = error { true } else { false } }(),
            "\(String(describing: error))")
    }

    /// Issue #17: a 401 `auth.expired` with `serverTime` Int64.min overflowed the clock
    /// offset and crashed accessd. Now a time no clock can show is not followed.
    @Test(arguments: [Int64.min, Int64.max, 0])
    func anImpossibleServerTimeIsRefusedNotFollowed(serverTime: Int64) async throws {
        let expired = ScriptedSite.Answer(
            status: 401,
            body: json(
                SiteErrorAnswer(
                    code: "auth.expired", message: "clock", serverTime: serverTime)))
        try await withSite([expired, registrationAnswer]) { client, address, site in
            do {
                _ = try await client.status(of: stored(siteURL: address.description))
                Issue.record("a refusal was expected")
            } catch let SiteError.refused(status, code, _) {
                #expect(status == 401 && code == "auth.expired")
            }
            #expect(site.requests.count == 1, "no retry on an impossible clock")
        }
    }

    @Test func aClockThatIsOffIsFollowedOnce() async throws {
        let now = Int64(Date().timeIntervalSince1970)
        let expired = ScriptedSite.Answer(
            status: 401,
            body: json(
                SiteErrorAnswer(
                    code: "auth.expired", message: "clock", serverTime: now + 3_600)))
        let fine = ScriptedSite.Answer(
            status: 200,
            body: json(
                CredentialStatusAnswer(
                    id: credentialID.description, state: .suspended, secondFactor: true)))
        let status = try await withSite([expired, fine]) { client, address, site in
            let status = try await client.status(of: stored(siteURL: address.description))
            #expect(site.requests.count == 2)
            return status
        }
        #expect(status.state == .suspended && status.secondFactor)
    }

    @Test func anAnswerOfTheWrongShapeIsMalformed() async throws {
        for body in [#"{"state":"lost"}"#, "[]", "not json", #"{"cursor":1}"#] {
            await #expect(throws: SiteError.self, "\(body)") {
                try await withSite([.init(status: 200, body: body)]) { client, address, _ in
                    _ = try await client.status(of: stored(siteURL: address.description))
                }
            }
        }
    }
}
