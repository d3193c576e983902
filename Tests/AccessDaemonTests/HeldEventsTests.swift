import ControlSocket
import Testing

@testable import AccessDaemon

/// What the journal holds while the store refuses events (a full disk): the first 1,024 in
/// order, the rest counted in one `events.lost` written after them.
@Suite("Held events", .timeLimit(.minutes(5)))
struct HeldEventsTests {
    static func held(_ index: Int) -> HeldEvents.Event {
        let gone = ReaderUnavailableEvent(reader: String(index))
        return HeldEvents.Event(event: gone.event, data: gone.json, time: Double(index))
    }

    @Test func pastTheCapacityEventsAreCountedInOneNotice() {
        var held = HeldEvents()
        for index in 0..<1500 { held.hold(Self.held(index)) }
        let pending = held.pending
        #expect(pending.count == 1025)
        #expect(pending.prefix(1024).map { $0.event.reader } == (0..<1024).map { String($0) })
        #expect(pending.last?.kind == .eventsLost)
        #expect(pending.last?.event == EventsLostEvent(count: 476, from: 1024, to: 1499).event)
        #expect(pending.last?.data == ["count": 476, "from": 1024.0, "to": 1499.0])
        #expect(held.written() == (held: 1024, lost: 476))
        #expect(held.pending.isEmpty)
    }

    @Test func withinTheCapacityNothingIsCounted() {
        var held = HeldEvents()
        held.hold(Self.held(1))
        #expect(held.pending.map(\.kind) == [.readerUnavailable])
    }
}
