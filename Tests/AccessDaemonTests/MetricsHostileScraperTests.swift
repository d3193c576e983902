import BlueZTestSupport
import Foundation
import SuiteTraits
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What a hostile or careless scraper can do to the metrics server (issue #33).
///
/// Item 1: one connection that pipelines `GET /metrics` and never reads its answers
/// had each request answered into accessd's memory (RSS 47 → 444 MB in 30 s, past the unit's
/// MemoryMax). Now an answer waits while the connection cannot take it, and the socket is not
/// read meanwhile: the requests stay in the kernel's buffers and the client's send blocks.
@Suite(.threadOfItsOwn, .timeLimit(.minutes(5)))
struct MetricsHostileScraperTests {
    static func residentKiB(_ pid: pid_t) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// A TCP connection to the metrics port on loopback.
    static func connectedSocket(port: Int) throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(descriptor)
            throw TestEnvironmentError("cannot connect to 127.0.0.1:\(port)")
        }
        return descriptor
    }

    @Test func aScraperThatNeverReadsCannotGrowAccessd() async throws {
        let port = try MosquittoBroker.freePort()
        let harness = try await DaemonHarness(config: "[metrics]\nlisten = \"127.0.0.1:\(port)\"\n")
        try await harness.start()
        defer { _ = harness.stop() }
        let pid = try #require(harness.daemon?.pid)
        try await Task.sleep(for: .milliseconds(500))
        let before = Self.residentKiB(pid)

        let descriptor = try Self.connectedSocket(port: port)
        defer { close(descriptor) }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        // 165,000 requests (what the attack sent in 30 s), sent as fast as accessd takes
        // them; none of the answers is read.
        let request = Array("GET /metrics HTTP/1.1\r\nHost: kiosk\r\n\r\n".utf8)
        var sent = 0
        let deadline = ContinuousClock.now + .seconds(20)
        var stalledSince: ContinuousClock.Instant?
        while sent < 165_000, ContinuousClock.now < deadline {
            let written = request.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written == request.count {
                sent += 1
                stalledSince = nil
            } else {
                // A partial write or EAGAIN: accessd stopped taking requests.
                if written > 0 { break }
                if stalledSince == nil { stalledSince = .now }
                if ContinuousClock.now - stalledSince! > .seconds(2) { break }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        // accessd works through what it has read: give it the time the attack took.
        try await Task.sleep(for: .seconds(10))
        let after = Self.residentKiB(pid)
        print("pipelined \(sent) requests, none read: accessd RSS \(before) → \(after) KiB")
        #expect(after - before < 16 * 1024, "RSS grew \(after - before) KiB")
        // A scraper that reads is still answered.
        let scrape = try runCommand([
            "/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/metrics",
        ])
        #expect(scrape.output == "200")
    }

    /// Issue #33, item 9: `printf 'GET /metrics …' | socat -` (the request, then the client's
    /// side shut) got 0 bytes, on TCP and on the Unix socket.
    @Test func aRequestWhoseSenderShutItsSideIsAnswered() async throws {
        let port = try MosquittoBroker.freePort()
        let harness = try await DaemonHarness(config: "[metrics]\nlisten = \"127.0.0.1:\(port)\"\n")
        try await harness.start()
        defer { _ = harness.stop() }
        let tcp = try runCommand(
            ["/usr/bin/socat", "-t", "5", "-", "TCP:127.0.0.1:\(port)"],
            input: "GET /metrics HTTP/1.1\r\nHost: kiosk\r\n\r\n", timeout: readinessCeiling)
        #expect(
            tcp.output.hasPrefix("HTTP/1.1 200 OK") && tcp.output.contains("accessd_uptime_seconds"), "\(tcp.output)")
        _ = harness.stop()

        // The Unix socket: answered the same, and open to the kiosk's scrapers whatever the
        // unit's UMask (it was 0700 under UMask=0077).
        let socketPath = harness.directory + "/metrics.sock"
        try harness.writeConfig("[metrics]\nlisten = \"\(socketPath)\"\n")
        try await harness.start()
        let unix = try runCommand(
            ["/usr/bin/socat", "-t", "5", "-", "UNIX-CONNECT:\(socketPath)"],
            input: "GET /metrics HTTP/1.0\r\n\r\n", timeout: readinessCeiling)
        #expect(unix.output.hasPrefix("HTTP/1.0 200 OK"), "\(unix.output)")
        var info = stat()
        #expect(
            stat(socketPath, &info) == 0 && info.st_mode & 0o777 == 0o666,
            "mode \(String(info.st_mode & 0o777, radix: 8))")
    }

    /// Item 6: sixteen connections opened and left idle (reopened as the idle close freed them)
    /// kept every other scraper out: the 17th was accepted and closed without an answer.
    @Test func idleConnectionsCannotLockAScraperOut() async throws {
        let port = try MosquittoBroker.freePort()
        let harness = try await DaemonHarness(config: "[metrics]\nlisten = \"127.0.0.1:\(port)\"\n")
        try await harness.start()
        defer { _ = harness.stop() }
        var idle: [Int32] = []
        defer { for descriptor in idle { close(descriptor) } }
        for _ in 0..<16 {
            let descriptor = try Self.connectedSocket(port: port)
            idle.append(descriptor)
        }
        try await Task.sleep(for: .milliseconds(300))
        for attempt in 1...3 {
            let scrape = try runCommand(
                ["/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/metrics"])
            #expect(scrape.output == "200", "scrape \(attempt) with 16 idle connections held: \(scrape.output)")
        }
    }
}
