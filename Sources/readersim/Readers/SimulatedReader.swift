import AccessCore
import BlueZ
import Crypto
import Foundation
import ReaderSimulation

/// One simulated reader on a BlueZ adapter: advertises per docs/reader-protocol.md, serves
/// the control point, and runs the reader side of the protocol (`ReaderSession`) for each
/// central that subscribes, deciding from the site's data. Prints a JSON line for
/// everything it does.
actor SimulatedReader {
    private enum Input: Sendable {
        case write(BlueZPeripheral.Write)
        /// A central wrote the hold point (version 2): it asks for a standing challenge.
        case holdPointWritten(BlueZPeripheral.Write)
        case notifying(Bool)
        /// The adapter (re)appeared on bluetoothd: after bluetoothd restarted, or after the
        /// adapter was removed and added again. Registrations die with either.
        case adapterAppeared
        case bluetoothdLeft
        /// A central connected to this reader's adapter, or disconnected (its device path).
        case central(String, connected: Bool)
        /// Signals were dropped for a full buffer: a connection change may have been missed.
        case signalsLost(Int)
    }

    let configuration: SimulatedReaderConfiguration
    let adapter: String
    let provisioning: ReaderProvisioningSync
    private let connection: DBusConnection
    private var peripheral: BlueZPeripheral?
    private var session: ReaderSession?
    private var central: String?
    /// A central wrote the standing version to the hold point: its subscription gets a
    /// standing challenge. Like the session, one central at a time.
    private var standingRequested = false
    /// It wrote version 3 there (a version 3 reader only): certified challenges too.
    private var certifiedRequested = false
    /// Centrals connected now, by device path: presence advertisements run while any is.
    private var connectedCentrals: Set<String> = []
    private var timer: Task<Void, Never>?
    private let inputs: AsyncStream<Input>
    private let feed: AsyncStream<Input>.Continuation

    init(
        configuration: SimulatedReaderConfiguration, adapter: String, provisioning: ReaderProvisioningSync,
        connection: DBusConnection
    ) {
        self.configuration = configuration
        self.adapter = adapter
        self.provisioning = provisioning
        self.connection = connection
        // The bus thread hands calls over in order; one consumer keeps that order.
        (inputs, feed) = AsyncStream<Input>.makeStream()
    }

    private func line(_ event: String, _ fields: [String: Any] = [:]) {
        var object = fields
        object["event"] = event
        object["reader"] = configuration.id.description
        object["name"] = configuration.name
        SiteOutput.line(object)
    }

    /// Registers with BlueZ and serves until cancelled.
    func run() async throws {
        guard let siteData = provisioning.current.site else { throw ReaderProvisioningSync.NotProvisioned() }
        if siteData.signingKey == nil {
            let named = provisioning.current.certificates.contains { $0.readers.contains(configuration.id) }
            if configuration.protocolVersion < 3 || !named {
                // It will answer every holder unsupportedVersion: say why once, at the start.
                line(
                    "warning",
                    [
                        "detail": "the site allows only reader protocol version 3 (its pages carry no site key): "
                            + (configuration.protocolVersion < 3
                                ? "set protocol_version = 3, or start the site with --legacy-readers"
                                : "no certificate names this reader; name it at the site (site reader add --readers)")
                    ])
            }
        }
        let advertised = configuration.fault == .wrongSite ? SiteTag(siteData.tag.rawValue ^ 0x0000_0001) : siteData.tag
        let advertisement = configuration.advertisement(siteTag: advertised)
        let feed = self.feed
        let peripheral = BlueZPeripheral(
            connection: connection, adapter: "/org/bluez/" + adapter,
            root: "/org/accessd/readersim/r\(configuration.id.description.lowercased())",
            advertisement: .init(
                serviceData: [ReaderAdvertisement.serviceDataUUIDString: advertisement.serviceData],
                localName: configuration.displayName,
                intervalMilliseconds: configuration.intervalMilliseconds),
            serviceUUID: ReaderGATT.serviceUUID, characteristicUUID: ReaderGATT.controlPointUUID,
            holdPointUUID: configuration.protocolVersion >= 2 ? ReaderGATT.holdPointUUID : nil,
            holdPointValue: configuration.protocolVersion >= 3 ? [ReaderGATT.certifiedVersion] : nil,
            onNotifyingChanged: { feed.yield(.notifying($0)) },
            onHoldPointWrite: { feed.yield(.holdPointWritten($0)) },
            onWrite: { feed.yield(.write($0)) })
        self.peripheral = peripheral
        let watcher = try await watchBlueZ()
        defer { watcher.cancel() }
        try await peripheral.register()
        announced = (advertised, advertisement.serviceData)
        announceAdvertising()
        if configuration.fault == .silent {
            let delay = configuration.faultDelay
            Task {
                try? await Task.sleep(for: delay)
                await peripheral.stopAdvertising()
                self.line("fault", ["fault": "silent", "detail": "advertising stopped"])
            }
        }
        await withTaskCancellationHandler {
            for await input in inputs {
                await handle(input)
            }
        } onCancel: {
            feed.finish()
        }
        await peripheral.unregister()
        line("stopped")
    }

    /// What the peripheral advertises (fixed at start), as the `advertising` line says it.
    private var announced: (siteTag: SiteTag, serviceData: [UInt8])?

    private func announceAdvertising() {
        guard let announced else { return }
        line(
            "advertising",
            [
                "adapter": adapter, "kind": configuration.kind.description,
                "site": announced.siteTag.description, "serviceData": announced.serviceData.hexString,
            ])
    }

    /// Follows bluetoothd's name and this reader's adapter, so the reader registers again by
    /// itself when either comes back, as a real reader comes back after a power cut.
    private func watchBlueZ() async throws -> Task<Void, Never> {
        let adapterPath = "/org/bluez/" + adapter
        let signals = try await connection.signals(matching: [
            DBusMatchRule(
                sender: DBusDaemon.service, interface: DBusDaemon.interface, member: "NameOwnerChanged",
                arg0: BlueZClient.service),
            DBusMatchRule(
                sender: BlueZClient.service, interface: DBusObjectManager.interface,
                member: "InterfacesAdded"),
            DBusMatchRule(
                sender: BlueZClient.service, interface: DBusProperties.interface,
                member: "PropertiesChanged", pathNamespace: adapterPath, arg0: Device1.interface),
        ])
        let feed = self.feed
        return Task {
            for await signal in signals {
                guard case .message(let message) = signal else {
                    if case .overflow(let dropped) = signal { feed.yield(.signalsLost(dropped)) }
                    continue
                }
                switch message.member {
                case "NameOwnerChanged":
                    if message.arguments.count == 3, message.arguments[2].string?.isEmpty == true {
                        feed.yield(.bluetoothdLeft)
                    }
                case "PropertiesChanged":
                    if let path = message.path, message.arguments.count >= 2,
                        let connected = message.arguments[1].stringKeyed?["Connected"]?.bool
                    {
                        feed.yield(.central(path, connected: connected))
                    }
                case "InterfacesAdded":
                    guard message.arguments.count == 2, let path = message.arguments[0].string,
                        let interfaces = message.arguments[1].stringKeyed
                    else { break }
                    if path == adapterPath, interfaces[Adapter1.interface] != nil {
                        feed.yield(.adapterAppeared)
                    }
                    // A central never seen before gets its device object as it connects, and
                    // bluetoothd then says Connected only here, not in a PropertiesChanged.
                    if path.hasPrefix(adapterPath + "/"),
                        interfaces[Device1.interface]?.stringKeyed?["Connected"]?.bool == true
                    {
                        feed.yield(.central(path, connected: true))
                    }
                default:
                    break
                }
            }
        }
    }

    /// Registers the advertisement and GATT application again on the adapter that came
    /// back; bluetoothd may still be powering it (it refuses the advertisement until then),
    /// so up to ten tries a second apart.
    private func registerAgain() async {
        guard let peripheral else { return }
        timer?.cancel()
        session = nil
        central = nil
        line("adapter", ["adapter": adapter, "detail": "appeared; registering again"])
        connectedCentrals.removeAll()
        await peripheral.unregister()
        for attempt in 1...10 {
            do {
                try await peripheral.register()
                announceAdvertising()
                return
            } catch {
                line("error", ["detail": "cannot register on \(adapter) (attempt \(attempt) of 10): \(error)"])
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    private func handle(_ input: Input) async {
        switch input {
        case .adapterAppeared:
            await registerAgain()
        case .central(let path, let connected):
            await centralChanged(path, connected: connected)
        case .signalsLost(let dropped):
            line(
                "error",
                [
                    "detail":
                        "\(dropped) BlueZ signals lost for a full buffer: a central's connection change may be missed"
                ])
        case .bluetoothdLeft:
            connectedCentrals.removeAll()
            line("bluetoothd", ["detail": "bluetoothd left the bus; registering again when it is back"])
            if session != nil { await sessionInput(.disconnected) }
        case .notifying(true):
            await beginSession()
        case .notifying(false):
            standingRequested = false
            certifiedRequested = false
            if session != nil { await sessionInput(.disconnected) }
        case .holdPointWritten(let write):
            // Any other value asks for nothing: the connection stays version 1.
            certifiedRequested = configuration.protocolVersion >= 3 && write.value == [ReaderGATT.certifiedVersion]
            standingRequested = write.value == [ReaderGATT.standingVersion] || certifiedRequested
            if let from = write.central { central = from }
            line(
                "hold",
                [
                    "central": write.central ?? NSNull(), "value": write.value.hexString,
                    "standing": standingRequested, "certified": certifiedRequested,
                ])
        case .write(let write):
            if let from = write.central { central = from }
            if let mtu = write.mtu { await sessionInput(.mtuChanged(mtu)) }
            if configuration.fault == .drop, session != nil, let central {
                // Drop the link as soon as the credential answers the challenge.
                line("fault", ["fault": "drop", "detail": "disconnecting \(central)"])
                _ = try? await connection.call(
                    destination: BlueZClient.service, path: central,
                    interface: Device1.interface, method: "Disconnect")
                await sessionInput(.disconnected)
                return
            }
            await sessionInput(.fragmentReceived(write.value))
        }
    }

    /// The connectable advertisement stops while a central is connected; the presence
    /// advertisement (non-connectable, `presence` flag) keeps telling scanners how near the
    /// reader is, so a holder that connected early sees the person reach the door.
    private func centralChanged(_ path: String, connected: Bool) async {
        let wasConnected = !connectedCentrals.isEmpty
        if connected { connectedCentrals.insert(path) } else { connectedCentrals.remove(path) }
        guard configuration.presence, configuration.fault != .silent, let peripheral, let announced,
            wasConnected != !connectedCentrals.isEmpty
        else { return }
        if connected {
            let presence = configuration.advertisement(siteTag: announced.siteTag, presence: true)
            do {
                try await peripheral.startPresence(
                    .init(
                        serviceData: [ReaderAdvertisement.serviceDataUUIDString: presence.serviceData],
                        intervalMilliseconds: configuration.intervalMilliseconds))
                line("presence", ["advertising": true, "central": path])
            } catch {
                line("error", ["detail": "cannot advertise presence: \(error)"])
            }
        } else {
            await peripheral.stopPresence()
            line("presence", ["advertising": false])
        }
    }

    /// A central subscribed: a fresh session with the site's current data.
    private func beginSession() async {
        timer?.cancel()
        guard let data = siteConfiguration() else {
            line("error", ["detail": "not provisioned by the site"])
            return
        }
        session = ReaderSession(configuration: data)
        line(
            "connected",
            [
                "central": central ?? NSNull(), "standing": standingRequested,
                "certified": certifiedRequested && data.controller != nil,
            ])
        if configuration.fault == .malformed {
            line("fault", ["fault": "malformed", "detail": "sending a malformed frame instead of the challenge"])
            try? peripheral?.notify([0xC1, 0x01, 0xFF, 0xFF])
            return
        }
        var generator = SystemRandomNumberGenerator()
        let nonce =
            configuration.fault == .sameNonce
            ? Array(repeating: 0x5A, count: 16) : (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let secondNonce = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let standing = standingRequested
        let certified = certifiedRequested
        standingRequested = false
        certifiedRequested = false
        await sessionInput(
            .connected(nonce: nonce, secondFactorNonce: secondNonce, standing: standing, certified: certified))
    }

    private static func freshNonce() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    private func sessionInput(_ input: ReaderSession.Input) async {
        guard var current = session else { return }
        let wasStanding = current.isStanding
        let actions = current.handle(input)
        session = current
        for action in actions {
            switch action {
            case .send(let fragments):
                if configuration.fault == .late {
                    try? await Task.sleep(for: configuration.faultDelay)
                }
                for fragment in fragments {
                    do {
                        try peripheral?.notify(fragment)
                    } catch {
                        line("error", ["detail": "cannot notify: \(error)"])
                    }
                }
            case .startTimer where configuration.fault == .noTimeout:
                continue
            case .startTimer(let delay):
                timer?.cancel()
                timer = Task {
                    try? await Task.sleep(for: delay)
                    guard !Task.isCancelled else { return }
                    await self.sessionInput(.timerFired)
                }
            case .cancelTimer:
                timer?.cancel()
                timer = nil
            case .refreshChallenge:
                line("refresh", ["central": central ?? NSNull()])
                await sessionInput(
                    .freshNonce(
                        configuration.fault == .sameNonce
                            ? Array(repeating: 0x5A, count: 16) : Self.freshNonce()))
            case .finish(let report):
                session = nil
                if report.outcome == .disconnected, report.operation == nil, wasStanding {
                    // A held link let go before the door: a challenge stood, nothing was asked.
                    line("released", ["central": central ?? NSNull()])
                } else {
                    report.printed(by: self)
                }
            }
        }
    }

    func printReport(_ fields: [String: Any]) {
        var object = fields
        if object["central"] == nil, let central { object["central"] = central }
        line("exchange", object)
    }
}
