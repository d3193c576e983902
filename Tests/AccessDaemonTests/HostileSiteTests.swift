import AccessCore
import AccessJSON
import BlueZTestSupport
import ControlSocket
import Crypto
import Foundation
import SiteContract
import SuiteTraits
import Testing

/// Issue #17's attacks by a site, against the real accessd over its real socket.
@Suite(.threadOfItsOwn)
struct HostileSiteTests {
    /// A site answering `more: true` forever: in 40 s accessd made 964 calls and stored 480,010
    /// items (+85 MB), and `items.sync` never returned. Now one sync reads at most 100 pages
    /// and a credential keeps at most 10,000 items; what came before the limit is kept.
    @Test func aSiteThatNeverStopsPagingIsCut() async throws {
        let siteKey = P256.Signing.PrivateKey()
        let credential = "4b1f0d3e-2a01-4c6e-9d8b-0123456789ab"
        let registration = Self.json(RegistrationAnswer(
            credential: CredentialStatusAnswer(id: credential, state: .active, cardholderName: "Ada", secondFactor: false),
            site: SiteDescription(name: "Endless", tag: "0000002a", publicKey: SiteText.base64(siteKey.publicKey))))
        let status = Self.json(CredentialStatusAnswer(id: credential, state: .active, cardholderName: "Ada", secondFactor: false))
        let site = try await ScriptedSite { request, index in
            if request.target.hasSuffix("/register") { return .init(status: 201, body: registration) }
            guard request.target.contains("/items") else { return .init(status: 200, body: status) }
            // 100 new items a page, and always more.
            let items = (0..<100).map { #"{"id":"i\#(index)-\#($0)","type":"salto","name":"n","state":"active","data":{}}"# }
            return .init(status: 200, body: #"{"cursor":"c\#(index)","removed":[],"more":true,"items":["# + items.joined(separator: ",") + "]}")
        }
        defer { Task { await site.stop() } }
        let harness = try await DaemonHarness(config: "[site]\nsync_interval = 86400\n")
        try await harness.start()
        let admin = try harness.connect()
        _ = try admin.call("credentials.register", ["host": .string("http://127.0.0.1:\(site.port)"),
                                                    "code": "ABCD-EFGH-JKMN-PQRS"]).get()
        func sync() throws -> (error: String?, items: Int) {
            let answer = try admin.call("items.sync").get()
            let listed = try admin.call("items.list").get()["items"]?.array?.count ?? -1
            return (answer["credentials"]?.array?.first?["error"]?.string, listed)
        }
        func itemCalls() -> Int { site.requests.filter { $0.target.contains("/items") }.count }
        // The registration's own sync may be under way: items.sync waits for the next. One
        // of them stops at 100 pages (10,000 items), the next at the item limit.
        let started = ContinuousClock.now
        var (error, items) = try sync()
        print("hostile site: items.sync answered after \(ContinuousClock.now - started), \(itemCalls()) page calls")
        #expect(error == "site.limitExceeded")
        #expect(items == 10_000)
        #expect(harness.log.contains("more than 100 pages of items in one sync"))
        let calls = itemCalls()
        (error, items) = try sync()
        #expect(error == "site.limitExceeded")
        #expect(items == 10_000, "nothing past the limit is stored")
        #expect(itemCalls() == calls + 1, "one page, then the limit")
        #expect(harness.log.contains("more than 10000 items for one credential"))
        #expect(harness.stop() == 0)
    }

    static func json(_ message: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try! encoder.encode(message), as: UTF8.self)
    }
}
