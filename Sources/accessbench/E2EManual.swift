import AccessJSON
import ControlSocket
import Foundation

/// Manual access in `accessbench e2e --manual N` (issue #15, item 4): `access.request` →
/// decision as a client sees it, with a cold link (automatic access off: connect, resolve
/// services, exchange) and over the link `connect_early` holds (automatic access on, the
/// person in manual range: the request runs over it, only the protocol's round trips left).
extension LabBench {
    /// One request's time in ms, or nil when it did not end granted.
    func manualRequest(overHeldLink: Bool) async throws -> Double? {
        let client = try ControlConnection(path: socketPath)
        _ = try client.call("automaticAccess.set", ["enabled": .bool(overHeldLink)]).get()
        if overHeldLink {
            // Connected to early once per presence: the reader must be forgotten first.
            try radio.off("hci1", "hci0")
            while let readers = try? client.call("readers.list").get()["readers"]?.array, !readers.isEmpty {
                try await Task.sleep(for: .milliseconds(200))
            }
            let before = heldLinks
            try radio.rssi("hci1", "hci0", -90)  // manual range (path loss 31 of 40), not auto (20)
            let deadline = ContinuousClock.now + .seconds(20)
            while heldLinks == before, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
            guard heldLinks > before else { return nil }
            try await Task.sleep(for: .milliseconds(300))  // the link's services resolved and the hold confirmed
        } else {
            try radio.rssi("hci1", "hci0", -85)
            while (try? client.call("readers.list").get()["readers"]?.array?.isEmpty) != false {
                try await Task.sleep(for: .milliseconds(100))
            }
            try await Task.sleep(for: .seconds(2))  // the previous request's link gone
        }
        let start = ContinuousClock.now
        let answer = try client.call("access.request", ["reader": .string(E2EBenchmark.reader)])
        let elapsed = ContinuousClock.now - start
        guard case .success(let result) = answer, result["granted"] == true else { return nil }
        // accessd's own phases of this exchange, from its access.completed.
        if let events {
            let deadline = ContinuousClock.now + .seconds(2)
            while ContinuousClock.now < deadline, events.waitReadable(timeout: .milliseconds(100)) {
                guard
                    case .accessCompleted(let answer)? = ControlEvent(eventNotification: try events.nextNotification()),
                    answer.origin != "automatic"
                else { continue }
                phases = answer.timings.flatMap { try? JSONValue(encoding: $0).jsonText } ?? "{}"
                break
            }
        }
        return Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    }

    /// Links the reader saw a central make while it was out of auto range: readersim prints
    /// `presence` with `advertising: true` when a central connects and it starts its presence set.
    private var heldLinks: Int {
        let text = (try? String(contentsOfFile: directory + "/readers.out", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                return false
            }
            return object["event"] as? String == "presence" && object["advertising"] as? Bool == true
        }.count
    }
}
