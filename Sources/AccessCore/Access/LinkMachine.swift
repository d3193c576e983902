/// Every LE link the exchange engine opens, as one value: whom it is for (an exchange to
/// come, `connect_early`, or an exchange under way), where its Connect and Disconnect stand,
/// and the order BlueZ needs between them. The shell performs the actions and reports each
/// call's return with the link's id; a late report of a link that is gone changes nothing.
///
/// The order, each rule learnt in the lab (docs/bluez.md):
/// - a Connect to a device waits for the device's last Disconnect: a Connect racing a
///   Disconnect fails;
/// - a Disconnect waits for its Connect to return: a held link whose owner let go while it
///   connected came up afterwards with nobody left to drop it (issue #31). A held link's
///   Connect is never cancelled, so that is bluetoothd's answer; an exchange's is cancelled
///   when the exchange ends, and returns at once;
/// - a new link waits for the Disconnect of a held link dropped to make room for it: the
///   controller gives the held link's slot away when it drops it, so the adapter never has
///   more links than `connection_limit`.
public struct LinkMachine: Sendable {
    public struct ID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
        public let rawValue: UInt64
        public init(rawValue: UInt64) { self.rawValue = rawValue }
        public var description: String { "link \(rawValue)" }
        public static func < (a: ID, b: ID) -> Bool { a.rawValue < b.rawValue }
    }

    /// Whom a link is for. An exchange is known by the shell's run id, which tells it from a
    /// later exchange with the same reader.
    public enum Owner: Hashable, Sendable {
        /// Held for an exchange to come (`connect_early`).
        case held(ReaderID)
        case exchange(ReaderID, run: UInt64)

        public var reader: ReaderID {
            switch self {
            case .held(let reader), .exchange(let reader, _): reader
            }
        }
    }

    public enum Phase: Hashable, Sendable {
        /// Waits for a Disconnect before its Connect is sent.
        case waiting
        /// Its Connect (for a held link: with the rest of its preparation) has not returned.
        case connecting
        /// Its Connect returned: the link is up, or failed; either way it is dropped when its
        /// owner lets go (a Disconnect of a link that is down costs nothing).
        case connected
        case disconnecting
    }

    public struct Link: Hashable, Sendable {
        public let id: ID
        public let device: String
        public internal(set) var owner: Owner?
        public internal(set) var phase: Phase
        /// Held, then taken over by an exchange: the exchange runs over it once it is up.
        public internal(set) var takenOver = false
        /// Dropped as a held link: links opened meanwhile wait for its Disconnect.
        public internal(set) var givesWayToOthers = false
    }

    public enum Input: Hashable, Sendable {
        /// Hold a link to the reader's device for an exchange to come.
        case hold(ReaderID, device: String)
        /// An exchange starts: it takes the reader's held link over, or opens its own.
        case exchange(ReaderID, device: String, run: UInt64)
        /// The link's Connect returned (a held link: its preparation ended); `up` when the
        /// link is up and ready for an exchange.
        case connectReturned(ID, up: Bool)
        /// A held link no exchange took is to go.
        case release(ReaderID)
        case exchangeEnded(run: UInt64)
        /// The link's Disconnect returned, and BlueZ's report of it came in.
        case disconnected(ID)
    }

    public enum Action: Hashable, Sendable {
        /// Connect, for the owner: a held link's preparation, or an exchange's own link.
        case connect(ID, device: String, Owner)
        /// The held link is up and ready: the controller hears of it (`linkPrepared`).
        case prepared(ID, ReaderID)
        /// A held link the exchange `run` took over is up: the exchange runs over it.
        case handOver(ID, run: UInt64)
        case disconnect(ID, device: String)
    }

    public private(set) var links: [ID: Link] = [:]
    private var lastID: UInt64 = 0

    public init() {}

    /// The link held for an exchange to come, if any (never more than one).
    public var held: Link? { links.values.first { if case .held = $0.owner { true } else { false } } }

    /// The link the exchange `run` runs over.
    public func link(ofRun run: UInt64) -> Link? {
        links.values.first { if case .exchange(_, run) = $0.owner { true } else { false } }
    }

    /// Whether any link to `device` is open, opening or closing.
    public func isLinked(_ device: String) -> Bool { links.values.contains { $0.device == device } }

    public mutating func handle(_ input: Input) -> [Action] {
        switch input {
        case .hold(let reader, let device):
            guard held == nil, !links.values.contains(where: { $0.owner?.reader == reader }) else { return [] }
            return open(device, for: .held(reader))
        case .exchange(let reader, let device, let run):
            if var link = held, link.owner == .held(reader) {
                link.owner = .exchange(reader, run: run)
                link.takenOver = true
                links[link.id] = link
                return link.phase == .connected ? [.handOver(link.id, run: run)] : []
            }
            return open(device, for: .exchange(reader, run: run))
        case .connectReturned(let id, let up):
            guard var link = links[id], link.phase == .connecting else { return [] }
            link.phase = .connected
            links[id] = link
            switch link.owner {
            case nil: return disconnect(id)
            case .held(let reader): return up ? [.prepared(id, reader)] : []
            case .exchange(_, let run):
                // Taken over while it connected: the exchange hears it is up. An exchange's own
                // link reports its Connect from the exchange's task, which goes on by itself.
                return link.takenOver ? [.handOver(id, run: run)] : []
            }
        case .release(let reader):
            guard var link = held, link.owner == .held(reader) else { return [] }
            link.givesWayToOthers = true
            links[link.id] = link
            return letGo(link.id)
        case .exchangeEnded(let run):
            guard let link = link(ofRun: run) else { return [] }
            return letGo(link.id)
        case .disconnected(let id):
            guard links[id]?.phase == .disconnecting else { return [] }
            links[id] = nil
            return startWaiting()
        }
    }

    /// Every link at once, when the daemon stops: the devices to disconnect now, Connect
    /// returned or not (bluetoothd does not cancel a Connect whose caller left the bus).
    public mutating func dropAll() -> [String] {
        let devices = links.values.filter { $0.phase != .waiting && $0.phase != .disconnecting }.map(\.device)
        links.removeAll()
        return devices.sorted()
    }

    // MARK: Order

    private mutating func open(_ device: String, for owner: Owner) -> [Action] {
        lastID += 1
        let id = ID(rawValue: lastID)
        links[id] = Link(id: id, device: device, owner: owner, phase: .waiting)
        return startWaiting()
    }

    /// The owner lets go: dropped now if its Connect returned, once it returns if not, and
    /// forgotten if it was never sent.
    private mutating func letGo(_ id: ID) -> [Action] {
        guard var link = links[id] else { return [] }
        link.owner = nil
        links[id] = link
        switch link.phase {
        case .waiting:
            links[id] = nil
            return []
        case .connecting, .disconnecting:
            return []
        case .connected:
            return disconnect(id)
        }
    }

    private mutating func disconnect(_ id: ID) -> [Action] {
        guard var link = links[id] else { return [] }
        link.phase = .disconnecting
        links[id] = link
        return [.disconnect(id, device: link.device)]
    }

    /// Sends the Connect of every waiting link, oldest first, whose device is free and that
    /// no dropped held link's Disconnect holds back.
    private mutating func startWaiting() -> [Action] {
        var actions: [Action] = []
        for id in links.keys.sorted() {
            guard var link = links[id], link.phase == .waiting, let owner = link.owner else { continue }
            let blocked = links.values.contains { other in
                other.id != id && (other.device == link.device || other.givesWayToOthers)
                    && (other.phase != .waiting || other.id < id)
            }
            guard !blocked else { continue }
            link.phase = .connecting
            links[id] = link
            actions.append(.connect(id, device: link.device, owner))
        }
        return actions
    }
}
