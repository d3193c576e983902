import AccessJSON
import ControlSocket

/// Events the store refused (a full disk, an I/O error), held in order until it takes events
/// again: then written first, with the times they happened, in one transaction with the event
/// that found the store working, and handed to subscribers as any other. Past `capacity` the
/// newest are counted instead, and written as one `events.lost` notice after the held ones.
/// Events during a full disk used to vanish with a log line each (issue #17).
struct HeldEvents {
    /// About a minute of a busy door's events (sightings are most of them), in ~1 MB.
    static let capacity = 1024

    struct Event {
        var event: ControlEvent
        /// `event`'s data as the journal keeps it, encoded once.
        var data: JSONValue
        var time: Double

        var kind: EventKind { event.kind }
    }

    private var held: [Event] = []
    private var lost = (count: 0, from: 0.0, to: 0.0)
    /// Whether the store refused the last write: logged once per outage, not once per event.
    var failing = false

    mutating func hold(_ event: Event) {
        guard held.count < Self.capacity else {
            if lost.count == 0 { lost.from = event.time }
            lost.count += 1
            lost.to = event.time
            return
        }
        held.append(event)
    }

    /// What to write before anything new, in order: the held events, then the notice of those
    /// that were not held.
    var pending: [Event] {
        guard lost.count > 0 else { return held }
        let notice = EventsLostEvent(count: lost.count, from: lost.from, to: lost.to)
        return held + [Event(event: notice.event, data: notice.json, time: lost.to)]
    }

    /// The pending events were written: forgets them, and says how many there were.
    mutating func written() -> (held: Int, lost: Int) {
        defer {
            held.removeAll()
            lost = (0, 0, 0)
            failing = false
        }
        return (held.count, lost.count)
    }
}
