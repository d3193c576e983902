import AccessCore
import BlueZ
import NIOConcurrencyHelpers

/// One connection to the reader under test, from the holder's side: connected, services
/// resolved, the control point subscribed. Fragments the reader notifies are kept in
/// arrival order; whole messages are read from them with a deadline.
final class ConformanceLink: Sendable {
    /// What the next read found.
    enum Received: Sendable {
        case message(ProtocolMessage)
        /// Fragments that break §5 or bytes that are no §6 message.
        case broken(ProtocolError)
        /// The reader dropped the link (or the control point went away).
        case dropped
        case nothingWithin(Duration)
    }

    let central: BlueZClient
    let device: String
    let controlPoint: GattCharacteristicState
    /// The ATT MTU BlueZ reports for the link (`GattCharacteristic1.MTU`), 23 when it says none.
    let mtu: Int
    /// Whether a standing challenge was asked for through the hold point (version 2, §6).
    let isStanding: Bool
    /// Whether certified challenges were asked for (version 3, §1.1): the reader's hold point
    /// can be read, and the link wrote `03` to it, as accessd does.
    let isCertified: Bool
    private let inbox = NIOLockedValueBox(Inbox())
    private let pump: Task<Void, Never>

    private struct Inbox {
        var fragments: [[UInt8]] = []
        var ended = false
        /// Every fragment received, for the size check.
        var largest = 0
    }

    private init(
        central: BlueZClient, device: String, controlPoint: GattCharacteristicState, isStanding: Bool,
        isCertified: Bool, notifications: AsyncStream<[UInt8]>
    ) {
        self.central = central
        self.device = device
        self.controlPoint = controlPoint
        self.isStanding = isStanding
        self.isCertified = isCertified
        mtu = max(controlPoint.mtu ?? ReaderGATT.minimumMTU, ReaderGATT.minimumMTU)
        let inbox = self.inbox
        pump = Task {
            for await fragment in notifications {
                inbox.withLockedValue {
                    $0.fragments.append(fragment)
                    $0.largest = max($0.largest, fragment.count)
                }
            }
            inbox.withLockedValue { $0.ended = true }
        }
    }

    /// Connects to `device`, resolves its services and subscribes to the control point.
    /// A version 3 reader (its hold point can be read) is asked for certified challenges on
    /// every link, as accessd asks, which asks for a standing challenge too (§1.1); otherwise
    /// `standing` first asks for a standing challenge through the hold point when the reader
    /// has one (version 2, §6; `isStanding` says whether it had).
    static func open(
        _ central: BlueZClient, device: String,
        standing: Bool = false
    ) async throws(ConformanceFailure) -> ConformanceLink {
        let found: GattCharacteristicState?
        do throws(BlueZError) {
            try await central.connect(device: device, timeout: .seconds(10))
            found = try await central.resolvedCharacteristic(
                device: device, service: ReaderGATT.serviceUUID,
                characteristic: ReaderGATT.controlPointUUID,
                timeout: .seconds(10))
        } catch {
            throw ConformanceFailure("cannot connect and resolve its services: \(error)")
        }
        guard let point = found else {
            await close(central, device: device)
            throw ConformanceFailure(
                "no service \(ReaderGATT.serviceUUID) with control point \(ReaderGATT.controlPointUUID)")
        }
        let holdPoint = await central.characteristic(
            device: device, service: ReaderGATT.serviceUUID, characteristic: ReaderGATT.holdPointUUID)
        let certified = holdPoint?.flags.contains("read") == true
        let hold = standing || certified ? holdPoint : nil
        if let hold {
            do throws(BlueZError) {
                try await central.writeValue(
                    characteristic: hold.path, [certified ? ReaderGATT.certifiedVersion : ReaderGATT.standingVersion],
                    type: .withResponse, timeout: .seconds(5))
            } catch {
                await close(central, device: device)
                throw ConformanceFailure("a write to the hold point failed: \(error)")
            }
        }
        let notifications: AsyncStream<[UInt8]>
        do throws(BlueZError) {
            notifications = try await central.notifications(characteristic: point.path)
        } catch {
            await close(central, device: device)
            throw ConformanceFailure("cannot subscribe to the control point: \(error)")
        }
        return ConformanceLink(
            central: central, device: device, controlPoint: point, isStanding: hold != nil,
            isCertified: certified && hold != nil, notifications: notifications)
    }

    /// The largest fragment the reader sent so far.
    var largestFragment: Int { inbox.withLockedValue { $0.largest } }

    /// What the next wait for a fragment found.
    enum Arrival: Sendable {
        case fragment([UInt8])
        case dropped
        case nothingBy
    }

    /// The next fragment the reader notified, as it came.
    func nextFragment(by deadline: ContinuousClock.Instant) async -> Arrival {
        while true {
            let (fragment, ended) = inbox.withLockedValue { inbox -> ([UInt8]?, Bool) in
                inbox.fragments.isEmpty ? (nil, inbox.ended) : (inbox.fragments.removeFirst(), false)
            }
            if let fragment { return .fragment(fragment) }
            // The notifications end when the control point goes; a link dropped under a
            // device BlueZ keeps shows as the device no longer connected.
            let connected = await central.devices[device]?.connected ?? false
            if ended || !connected { return .dropped }
            guard ContinuousClock.now < deadline else { return .nothingBy }
            // Polled, not awaited: the notifications are pumped by a task of their own, and a
            // few milliseconds are nothing against the protocol's 5 s steps.
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// The next whole message, reassembled from the reader's fragments.
    func receive(within timeout: Duration) async -> Received {
        let deadline = ContinuousClock.now + timeout
        var reassembler = FrameReassembler()
        while true {
            switch await nextFragment(by: deadline) {
            case .fragment(let fragment):
                do throws(ProtocolError) {
                    guard let bytes = try reassembler.feed(fragment) else { continue }
                    return .message(try ProtocolMessage(decoding: bytes))
                } catch {
                    return .broken(error)
                }
            case .dropped: return .dropped
            case .nothingBy: return .nothingWithin(timeout)
            }
        }
    }

    /// Writes one fragment as it is, well formed or not.
    func write(_ fragment: [UInt8]) async throws(ConformanceFailure) {
        do throws(BlueZError) {
            try await central.writeValue(
                characteristic: controlPoint.path, fragment, type: .withResponse,
                timeout: .seconds(5))
        } catch {
            throw ConformanceFailure("a write to the control point failed: \(error)")
        }
    }

    /// Drops the link and waits until BlueZ says it is down, so the next connection is a new one.
    func close() async {
        pump.cancel()
        await Self.close(central, device: device)
    }

    private static func close(_ central: BlueZClient, device: String) async {
        try? await central.disconnect(device: device, timeout: .seconds(5))
        for _ in 0..<100 where await central.devices[device]?.connected == true {
            try? await Task.sleep(for: .milliseconds(50))
        }
    }
}

/// Why a check could not be carried out, in one sentence.
struct ConformanceFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
