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
}
