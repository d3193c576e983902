import AccessJSON
import BlueZTestSupport
import ControlSocket
import Foundation
import SuiteTraits
import Testing

/// SIGTERM while clients keep calling (issue #31): accessd answered `items.sync` and
/// `access.request` that arrived after their service had stopped with nothing at all, never
/// finished its socket, and stayed until systemd's SIGKILL at `TimeoutStopSec` (15 s).
@Suite(.threadOfItsOwn, .timeLimit(.minutes(5)))
struct ShutdownTests {
    /// What one client got: answers, `shuttingDown` refusals, and anything else.
    struct Tally: Sendable {
        var answered = 0
        var shuttingDown = 0
        var other: [String] = []
    }

    @Test(.timeLimit(.minutes(2)))
    func requestsDuringSIGTERMAreAnsweredAndAccessdExitsWellInsideTimeoutStopSec() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        let process = try #require(harness.daemon)
        let methods = ["items.sync", "access.request", "status.get", "items.sync"]
        // 20 clients, each calling one method in a loop until its connection closes.
        let clients = (0..<20).map { index in
            taskOnThreadOfItsOwn { () -> Tally in
                var tally = Tally()
                guard let connection = try? harness.connect() else { return tally }
                let method = methods[index % methods.count]
                let params: JSONValue = method == "access.request" ? ["reader": "2A01"] : .object([:])
                while let result = try? connection.call(method, params) {
                    switch result {
                    case .success: tally.answered += 1
                    case .failure(let error) where error.data?["error"] == "shuttingDown": tally.shuttingDown += 1
                    case .failure(let error)
                    where method == "access.request" && error.data?["cause"] == "readerNotHeard":
                        tally.answered += 1
                    case .failure(let error): tally.other.append("\(method): \(error.message)")
                    }
                }
                return tally
            }
        }
        try await Task.sleep(for: .milliseconds(500))
        let signalled = ContinuousClock.now
        // SIGTERM; SIGKILL after 20 s, as a stop that hangs would need.
        let status = process.stop(grace: 20)
        let took = ContinuousClock.now - signalled
        var tallies: [Tally] = []
        for client in clients { tallies.append(try await client.value) }
        print(
            "shutdown: SIGTERM with 20 clients calling → exit in \(took) (TimeoutStopSec is 15 s); "
                + "answers \(tallies.map(\.answered).reduce(0, +)), shuttingDown \(tallies.map(\.shuttingDown).reduce(0, +))"
        )
        #expect(status == 0, "accessd did not exit by itself within 20 s of SIGTERM: \(harness.log.suffix(3000))")
        #expect(took < .seconds(5))
        #expect(tallies.allSatisfy { $0.answered > 0 }, "every client was served before the stop: \(tallies)")
        #expect(tallies.flatMap(\.other).isEmpty, "\(tallies.flatMap(\.other).prefix(5))")
    }
}
