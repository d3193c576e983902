import AccessCore
import BlueZ
import Crypto

/// An exchange's link: connect, wait for services, find the control point, subscribe, then
/// read notifications until the link or the exchange ends. Runs on the exchange's own task,
/// never on the engine, and reports each step back with the run's id.
extension ExchangeEngine {
    enum Phase { case connected, resolved }

    nonisolated func runLink(
        _ reader: ReaderID, id: UInt64, link: LinkMachine.ID, devicePath: String, connectTimeout: Duration
    )
        async
    {
        do throws(BlueZError) {
            let deadline = ContinuousClock.now + connectTimeout
            do throws(BlueZError) {
                try await central.connect(device: devicePath, timeout: connectTimeout)
            } catch {
                await connectReturned(link, up: false)
                throw error
            }
            await connectReturned(link, up: true)
            await reached(.connected, reader, id: id)
            try await central.waitForServicesResolved(device: devicePath, timeout: deadline - ContinuousClock.now)
            await reached(.resolved, reader, id: id)
            guard
                let characteristic = try await central.resolvedCharacteristic(
                    device: devicePath, service: ReaderGATT.serviceUUID, characteristic: ReaderGATT.controlPointUUID,
                    timeout: deadline - ContinuousClock.now)
            else {
                await noControlPoint(reader, id: id)
                return
            }
            try await askForVersion3(device: devicePath)
            let notifications = try await central.notifications(characteristic: characteristic.path)
            guard await linkUp(reader, id: id, characteristic: characteristic) else { return }
            for await fragment in notifications {
                guard await received(reader, id: id, fragment) else { return }
            }
            await input(reader, id: id, .disconnected)
        } catch {
            await linkFailed(reader, id: id, error)
        }
    }

    /// A version 3 reader (its hold point can be read, reader protocol §1.1) is asked for
    /// certified challenges before the subscription; any other reader is left as it is.
    /// Returns whether it was asked.
    @discardableResult
    nonisolated func askForVersion3(device: String) async throws(BlueZError) -> Bool {
        guard
            let holdPoint = await central.characteristic(
                device: device, service: ReaderGATT.serviceUUID, characteristic: ReaderGATT.holdPointUUID),
            holdPoint.flags.contains("read")
        else { return false }
        try await central.writeValue(
            characteristic: holdPoint.path, [ReaderGATT.certifiedVersion], type: .withResponse,
            timeout: await settings.stepTimeout)
        return true
    }

    /// What a holder trusts of a version 3 reader of the site it registered with (reader
    /// protocol §1.1): certificates signed by the site key and not withdrawn in the site's
    /// last item sync, checked against the wall clock now.
    nonisolated func certificateTrust(siteKey: P256.Signing.PublicKey, siteTag: SiteTag) -> CertificateTrust {
        CertificateTrust(
            chain: SiteKeyChain(registered: siteKey, siteTag: siteTag, statements: []),
            withdrawn: book.withdrawnCertificates(siteTag: siteTag, siteKey: siteKey), now: Clocks.wall())
    }

    /// Writes what is yielded to the control point at `path`, in order, each write answered
    /// before the next; the first failure calls `failed` and ends the writes.
    func writer(to path: String, failed: @escaping @Sendable (isolated ExchangeEngine) -> Void)
        -> (AsyncStream<[UInt8]>.Continuation, Task<Void, Never>)
    {
        let (writes, continuation) = AsyncStream<[UInt8]>.makeStream()
        let task = Task { [central, settings] in
            for await fragment in writes {
                do throws(BlueZError) {
                    try await central.writeValue(
                        characteristic: path, fragment, type: .withResponse,
                        timeout: settings.stepTimeout)
                } catch {
                    failed(self)
                    return
                }
            }
        }
        return (continuation, task)
    }

    private func reached(_ phase: Phase, _ reader: ReaderID, id: UInt64) {
        guard runs[reader]?.id == id else { return }
        switch phase {
        case .connected: runs[reader]?.phases.connected = ContinuousClock.now
        case .resolved: runs[reader]?.phases.resolved = ContinuousClock.now
        }
    }

    private func noControlPoint(_ reader: ReaderID, id: UInt64) {
        guard runs[reader]?.id == id else { return }
        logger.warning("reader has no control point", metadata: ["reader": "\(reader)"])
        end(reader, .failed(.protocolViolation))
    }

    /// The control point is subscribed: the writer starts, and the session hears the MTU
    /// and the connection. False when the exchange ended meanwhile.
    private func linkUp(_ reader: ReaderID, id: UInt64, characteristic: GattCharacteristicState) -> Bool {
        guard runs[reader]?.id == id else { return false }
        let (writes, writing) = writer(to: characteristic.path) { engine in engine.writeFailed(reader, id: id) }
        runs[reader]?.writes = writes
        runs[reader]?.writer = writing
        if let mtu = characteristic.mtu {
            runs[reader]?.phases.mtu = mtu
            feed(reader, .mtuChanged(mtu))
        }
        feed(reader, .connected)
        return runs[reader]?.id == id
    }

    private func received(_ reader: ReaderID, id: UInt64, _ fragment: [UInt8]) -> Bool {
        guard runs[reader]?.id == id else { return false }
        feed(reader, .fragmentReceived(fragment))
        return runs[reader]?.id == id
    }

    private func input(_ reader: ReaderID, id: UInt64, _ input: CredentialSession.Input) {
        guard runs[reader]?.id == id else { return }
        feed(reader, input)
    }

    /// A failed write mid-session ends it; while the session is finishing it is the reader's loss.
    private func writeFailed(_ reader: ReaderID, id: UInt64) {
        guard let run = runs[reader], run.id == id, !run.session.isFinished else { return }
        end(reader, .failed(.remoteClose))
    }

    private func linkFailed(_ reader: ReaderID, id: UInt64, _ error: BlueZError) {
        guard runs[reader]?.id == id else { return }
        logger.info("link failed", metadata: ["reader": "\(reader)", "error": "\(error)"])
        end(reader, .failed(Self.failure(for: error)))
    }

    // MARK: Links

    /// Performs what the link machine decided, in order.
    func perform(_ actions: [LinkMachine.Action]) {
        for action in actions {
            switch action {
            case .connect(let link, let devicePath, .held(let reader)):
                prepare(reader, link: link, devicePath: devicePath)
            case .connect(let link, let devicePath, .exchange(let reader, let run)):
                guard runs[reader]?.id == run else { continue }
                runs[reader]?.link = Task { [connectTimeout = settings.connectTimeout] in
                    await self.runLink(
                        reader, id: run, link: link, devicePath: devicePath, connectTimeout: connectTimeout)
                }
            case .prepared(_, let reader):
                reports.yield(.linkPrepared(reader))
            case .handOver(let link, let run):
                handOver(link, to: run)
            case .disconnect(let link, let devicePath):
                disconnect(link, devicePath: devicePath)
            }
        }
    }

    func connectReturned(_ link: LinkMachine.ID, up: Bool) {
        perform(links.handle(.connectReturned(link, up: up)))
    }

    /// Sends the link's Disconnect after the last writes over it; the link machine hears when
    /// it returned and BlueZ reported the link down (when there will be a report).
    private func disconnect(_ link: LinkMachine.ID, devicePath: String) {
        resources.standing.removeValue(forKey: link)?.stop()
        let (writer, reportWillCome) = resources.closing.removeValue(forKey: link) ?? (nil, false)
        let reportedBefore = dropsReported[devicePath, default: 0]
        resources.disconnecting[link] = Task { [central] in
            await writer?.value
            try? await central.disconnect(device: devicePath, timeout: .seconds(5))
            if reportWillCome { await self.disconnectionReported(devicePath, after: reportedBefore) }
            self.disconnected(link)
        }
    }

    private func disconnected(_ link: LinkMachine.ID) {
        resources.disconnecting[link] = nil
        perform(links.handle(.disconnected(link)))
    }

    // MARK: Connecting early

    /// Connects to a reader still outside auto-connect range and resolves its services; the
    /// exchange that follows at auto range finds the link up. A version 2 reader is asked for
    /// a standing challenge too, so that exchange is one round trip. A failure here costs
    /// nothing: the exchange connects by itself.
    func holdLink(_ attributes: ReaderAttributes, devicePath: String) {
        guard runs[attributes.id] == nil, links.held == nil else { return }
        resources.heldReader = attributes
        perform(links.handle(.hold(attributes.id, device: devicePath)))
    }

    /// The held link's Connect is sent: connect, resolve, ask for a standing challenge.
    private func prepare(_ reader: ReaderID, link: LinkMachine.ID, devicePath: String) {
        guard let attributes = resources.heldReader, attributes.id == reader else { return }
        resources.heldReader = nil
        let siteKey = book.presentation(for: attributes, aperioEnabled: settings.aperioEnabled)?.2
        logger.info("connecting early", metadata: ["reader": "\(reader)", "device": "\(devicePath)"])
        Task { [central, settings, logger] in
            let controlPoint: GattCharacteristicState?
            do throws(BlueZError) {
                let deadline = ContinuousClock.now + settings.connectTimeout
                try await central.connect(device: devicePath, timeout: settings.connectTimeout)
                controlPoint = try await central.resolvedCharacteristic(
                    device: devicePath, service: ReaderGATT.serviceUUID, characteristic: ReaderGATT.controlPointUUID,
                    timeout: deadline - ContinuousClock.now)
            } catch {
                logger.info("connecting early failed", metadata: ["reader": "\(reader)", "error": "\(error)"])
                self.connectReturned(link, up: false)
                return
            }
            if let siteKey, let controlPoint {
                await self.askForStandingChallenge(
                    attributes, link: link, devicePath: devicePath, controlPoint: controlPoint, siteKey: siteKey)
            }
            self.connectReturned(link, up: true)
        }
    }

    /// Drops a held link no exchange took, once its Connect has returned.
    func releaseLink(_ reader: ReaderID) {
        if resources.heldReader?.id == reader { resources.heldReader = nil }
        guard links.held?.owner == .held(reader) else { return }
        logger.info("dropping the early link", metadata: ["reader": "\(reader)"])
        perform(links.handle(.release(reader)))
    }
}
