@testable import AccessDaemon
import Testing

/// What the journal holds while the store refuses events (a full disk): the first 1,024 in
/// order, the rest counted in one `events.lost` written after them.
@Suite("Held events")
struct HeldEventsTests {
    @Test func pastTheCapacityEventsAreCountedInOneNotice() {
        var held = HeldEvents()
        for index in 0..<1500 { held.hold(.init(kind: "reader.updated", data: ["n": .int(Int64(index))], time: Double(index))) }
        let pending = held.pending
        #expect(pending.count == 1025)
        #expect(pending.prefix(1024).map { $0.data["n"]?.int } == (0..<1024).map { Int64($0) })
        #expect(pending.last?.kind == "events.lost")
        #expect(pending.last?.data == ["count": 476, "from": 1024.0, "to": 1499.0])
        #expect(held.written() == (held: 1024, lost: 476))
        #expect(held.pending.isEmpty)
    }

    @Test func withinTheCapacityNothingIsCounted() {
        var held = HeldEvents()
        held.hold(.init(kind: "sdk.state", data: [:], time: 1))
        #expect(held.pending.map(\.kind) == ["sdk.state"])
    }
}
