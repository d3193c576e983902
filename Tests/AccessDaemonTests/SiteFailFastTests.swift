import AccessJSON
import BlueZTestSupport
import ControlSocket
import Foundation
import SuiteTraits
import Testing

/// Site calls that cannot succeed answer at once and blame only their own site (issue #35,
/// item 3): every call to a site that was down or untrusted took exactly 10.0 s, and a
/// registration refused for a mistyped URL marked the healthy registered site failing.
@Suite("site failures, fast and to the right site", .threadOfItsOwn, .timeLimit(.minutes(5)))
struct SiteFailFastTests {
    /// With a 30 s request timeout (a connect timeout of 10 s): a URL where nothing listens
    /// and a site whose certificate is not trusted are refused in well under that, each
    /// naming its host, and the site accessd holds a credential with stays `ok`. Prints the
    /// times.
    @Test func aRefusedRegistrationIsQuickAndLeavesTheRegisteredSiteOK() async throws {
        let harness = try await DaemonHarness(config: "[site]\nrequest_timeout = 30\nsync_interval = 3600\n")
        let site = try SiteHarness(directory: harness.directory)
        try await site.serve()
        defer { site.stop() }
        try await harness.start()
        let client = try harness.connect()
        _ = try client.call("credentials.register", ["url": .string(try site.invite("Ada").url)]).get()

        // A URL with the port mistyped: nothing listens there.
        let mistyped = try site.invite("Bob").url.replacingOccurrences(of: ":\(site.port)/", with: ":1/")
        var started = ContinuousClock.now
        let refused = try client.call("credentials.register", ["url": .string(mistyped)])
        let refusedAfter = ContinuousClock.now - started
        guard case .failure(let refusal) = refused else {
            Issue.record("a registration to a closed port succeeded")
            return
        }
        #expect(refusal.message.contains("nothing accepts connections at 127.0.0.1:1"), "\(refusal.message)")

        // A site with its own CA, which this kiosk does not trust.
        let pki = try TestPKI(directory: harness.directory + "/pki")
        try FileManager.default.createDirectory(atPath: harness.directory + "/tls", withIntermediateDirectories: true)
        let untrusted = try SiteHarness(directory: harness.directory + "/tls")
        try await untrusted.serve(extra: ["--tls-cert", pki.serverCertificate, "--tls-key", pki.serverKey])
        defer { untrusted.stop() }
        started = ContinuousClock.now
        let distrusted = try client.call("credentials.register", ["url": .string(try untrusted.invite("Eve").url)])
        let distrustedAfter = ContinuousClock.now - started
        guard case .failure(let distrust) = distrusted else {
            Issue.record("a certificate from an unknown CA was accepted")
            return
        }
        #expect(
            distrust.message.contains("the certificate of 127.0.0.1:\(untrusted.port) is not trusted"),
            "\(distrust.message)")
        print("register refused after \(refusedAfter) (closed port), \(distrustedAfter) (untrusted certificate)")
        #expect(refusedAfter < .seconds(5) && distrustedAfter < .seconds(5), "was 10 s each")

        // The registered site is not blamed.
        let status = try client.call("status.get").get()
        #expect(status["featureErrors"]?.array?.contains("cloudConnection") == false, "\(status.jsonText)")
        let diagnose = try runCommand(
            [AccessctlTests.accessctl, "diagnose", "--socket", harness.socketPath], environment: ["LC_ALL": "C.UTF-8"])
        let siteLine = diagnose.output.split(separator: "\n").first { $0.contains("  site  ") }
        #expect(siteLine?.hasPrefix("ok") == true, "\(diagnose.output)")
        #expect(harness.stop() == 0)
    }

    /// A site address where connection attempts vanish (a firewall that drops them): with a
    /// 3 s request timeout, registration ends after the connect timeout, saying so and naming
    /// the host; it said "the connection to … failed (HTTPClientError)".
    @Test func aSiteThatDropsConnectionAttemptsIsNamedAfterTheConnectTimeout() async throws {
        let blackhole = try DroppingListener()
        defer { blackhole.close() }
        let (refusal, after) = try await Self.registerWithin3Seconds(at: "http://127.0.0.1:\(blackhole.port)")
        #expect(
            refusal.message.contains(
                "127.0.0.1:\(blackhole.port) did not accept a connection in time (connect timeout)"),
            "\(refusal.message)")
        print("register to a host that drops connection attempts: \(after): \(refusal.message)")
    }

    /// A site that takes the connection and never answers the TLS handshake: the call ends at
    /// its deadline as `site.timeout`. Before, the call's task waited on the handshake, which
    /// nothing cancelled, and registration never answered.
    @Test func aSiteSilentInTheHandshakeEndsAtTheDeadline() async throws {
        let silent = try SilentListener()
        defer { silent.close() }
        let (refusal, after) = try await Self.registerWithin3Seconds(at: "https://127.0.0.1:\(silent.port)")
        #expect(refusal.data?["error"] == "site.timeout", "\(refusal)")
        #expect(after < .seconds(10), "\(after)")
        print("register to a host silent in the handshake: \(after): \(refusal.message)")
    }

    /// A registration at `host` by a daemon with `request_timeout = 3`: its refusal, and how
    /// long it took.
    static func registerWithin3Seconds(at host: String) async throws -> (RPCError, Duration) {
        let harness = try await DaemonHarness(config: "[site]\nrequest_timeout = 3\n")
        try await harness.start()
        defer { _ = harness.stop() }
        let started = ContinuousClock.now
        let answer = try harness.connect().call(
            "credentials.register", ["host": .string(host), "code": "7KQ2M9XD4TPAZC3N"])
        let after = ContinuousClock.now - started
        guard case .failure(let refusal) = answer else {
            throw TestEnvironmentError("registered at \(host), which should not answer")
        }
        return (refusal, after)
    }
}

/// A TCP listener on loopback that never accepts: the kernel completes connections into its
/// queue, and nothing is ever said on them (a site whose server hangs before TLS).
struct SilentListener {
    let port: UInt16
    private let descriptor: Int32

    init() throws {
        let (listener, port) = try LoopbackPort.bound()
        guard listen(listener, 16) == 0 else { throw TestEnvironmentError("listen: errno \(errno)") }
        self.port = UInt16(port)
        descriptor = listener
    }

    func close() { _ = Glibc.close(descriptor) }
}

/// A TCP listener on loopback whose accept queue is full: the kernel drops every further SYN,
/// as a firewall between a kiosk and its site does (no refusal, no answer).
struct DroppingListener {
    let port: UInt16
    private let descriptors: [Int32]

    init() throws {
        let (listener, port) = try LoopbackPort.bound()
        guard listen(listener, 0) == 0 else { throw TestEnvironmentError("listen: errno \(errno)") }
        self.port = UInt16(port)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = self.port.bigEndian
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        // Backlog 0 queues one connection; two more fill what the kernel allows beyond it.
        var filling: [Int32] = []
        for _ in 0..<3 {
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            _ = fcntl(client, F_SETFL, O_NONBLOCK)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) }
            }
            filling.append(client)
        }
        descriptors = [listener] + filling
    }

    func close() {
        for descriptor in descriptors { _ = Glibc.close(descriptor) }
    }
}
