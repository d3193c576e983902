import ControlSocket
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The socket client accessctl and the tests use.
@Suite("Control connection", .timeLimit(.minutes(5)))
struct ControlConnectionTests {
    /// A connect that fails closes its own descriptor once: closed twice, the second close
    /// takes whatever another thread opened under the same number in between (seen: libdbus's
    /// new socket, and another client's connection, closed under them in the test suite).
    @Test func aFailedConnectClosesOnlyItsOwnDescriptor() async {
        let deadline = ContinuousClock.now + .seconds(2)
        let failing = Thread {
            while ContinuousClock.now < deadline {
                _ = try? ControlConnection(path: "/nonexistent-accessd-test/a.sock")
            }
        }
        failing.start()
        var stolen = 0
        while ContinuousClock.now < deadline {
            let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            // Someone else closed it if it is already gone.
            if fcntl(fd, F_GETFD) == -1 || close(fd) == -1 { stolen += 1 }
        }
        while failing.isExecuting { try? await Task.sleep(for: .milliseconds(10)) }
        #expect(stolen == 0)
    }

    /// Issue #35: accessd refuses a connection (-32005) and hangs up at once; a client that
    /// sends only afterwards gets EPIPE, and said "accessd closed the connection" (seen under
    /// load). The refusal waiting in the receive queue is the call's answer.
    @Test func aRefusalBeforeTheRequestWentOutIsTheAnswer() async throws {
        let path = NSTemporaryDirectory() + "refusing-\(UUID().uuidString).sock"
        defer { unlink(path) }
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        try #require(bound == 0 && listen(listener, 1) == 0)
        let refusal =
            #"{"error":{"code":-32005,"data":{"limit":8},"message":"too many clients (8); try again later"},"id":null,"jsonrpc":"2.0"}"#
            + "\n"
        let server = Thread {
            let client = accept(listener, nil, nil)
            _ = refusal.withCString { write(client, $0, strlen($0)) }
            close(client)
        }
        server.start()
        let connection = try ControlConnection(path: path)
        // The hang-up has happened before anything is sent.
        try await Task.sleep(for: .milliseconds(200))
        let answer = try connection.call("status.get")
        guard case .failure(let error) = answer else {
            Issue.record("a refusal answered as a success")
            return
        }
        #expect(error.code == -32005 && error.refusesTheConnection, "\(error)")
    }
}
