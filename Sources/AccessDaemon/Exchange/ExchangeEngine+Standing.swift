import AccessCore
import BlueZ
import Crypto

/// Standing challenges (docs/reader-protocol.md §6, version 2): on a held link to a reader
/// with a hold point, accessd asks for a standing challenge and subscribes at once, in manual
/// range; the reader's challenges (refreshed every 4 s) are verified as they come, and the
/// exchange at the door takes the subscription over and answers the newest at once: the
/// response and the decision are all that is left there.
extension ExchangeEngine {
    /// On the held link's connecting task, after services resolved. A reader without a hold
    /// point speaks version 1: the link stays held as it is, and the exchange subscribes.
    /// The hold point is looked up once the control point is found: a service's objects come
    /// before its resolution, so a version 2 reader's hold point is there by then.
    nonisolated func askForStandingChallenge(
        _ attributes: ReaderAttributes, link: LinkMachine.ID, devicePath: String,
        controlPoint: GattCharacteristicState,
        siteKey: P256.Signing.PublicKey
    ) async {
        let reader = attributes.id
        guard
            let holdPoint = await central.characteristic(
                device: devicePath, service: ReaderGATT.serviceUUID,
                characteristic: ReaderGATT.holdPointUUID)
        else { return }
        do throws(BlueZError) {
            // A version 3 reader (readable hold point) is asked for certified challenges,
            // which stand as version 2's do.
            if try await !askForVersion3(device: devicePath) {
                try await central.writeValue(
                    characteristic: holdPoint.path, [ReaderGATT.standingVersion], type: .withResponse,
                    timeout: await settings.stepTimeout)
            }
            let notifications = try await central.notifications(characteristic: controlPoint.path)
            let challenge = StandingChallenge(
                readerID: reader, siteTag: attributes.siteTag, sitePublicKey: siteKey,
                certificates: certificateTrust(siteKey: siteKey, siteTag: attributes.siteTag))
            await standing(
                reader, link: link, controlPoint: controlPoint, challenge: challenge, notifications: notifications)
        } catch {
            logger.info(
                "no standing challenge on the early link", metadata: ["reader": "\(reader)", "error": "\(error)"])
        }
    }

    private func standing(
        _ reader: ReaderID, link: LinkMachine.ID, controlPoint: GattCharacteristicState,
        challenge: StandingChallenge, notifications: AsyncStream<[UInt8]>
    ) {
        // Let go meanwhile: its Disconnect ends the subscription.
        guard let state = links.links[link], state.owner?.reader == reader, state.phase == .connecting else { return }
        let (continuation, writer) = writer(to: controlPoint.path) { engine in
            engine.standingWriteFailed(reader, link: link)
        }
        let reading = Task {
            for await fragment in notifications {
                guard self.standingFragment(reader, link: link, fragment) else { return }
            }
            self.standingEnded(reader, link: link)
        }
        resources.standing[link] = StandingLink(
            challenge: challenge, controlPoint: controlPoint, writes: continuation,
            writer: writer, reading: reading)
        logger.info("challenge standing on the early link", metadata: ["reader": "\(reader)"])
    }

    /// The exchange running over `link`, if it took the link's standing subscription over.
    private func standingRun(_ reader: ReaderID, link: LinkMachine.ID) -> ExchangeRun? {
        guard let run = runs[reader], run.standingReading != nil, links.link(ofRun: run.id)?.id == link else {
            return nil
        }
        return run
    }

    /// A notification on a standing subscription: to the exchange that took it over, else to
    /// the standing challenge. False once neither wants more.
    private func standingFragment(_ reader: ReaderID, link: LinkMachine.ID, _ fragment: [UInt8]) -> Bool {
        if standingRun(reader, link: link) != nil {
            feed(reader, .fragmentReceived(fragment))
            return standingRun(reader, link: link) != nil
        }
        guard var standing = resources.standing[link], links.links[link]?.owner?.reader == reader else { return false }
        do throws(ProtocolError) {
            try standing.challenge.receive(fragment, at: Clocks.monotonic(), replayGuard: &replayGuard)
            resources.standing[link] = standing
            return true
        } catch {
            // A forged or replayed challenge, or the reader's hold time ran out: the link
            // goes, and the exchange at the door connects afresh.
            logger.info(
                "standing challenge refused; dropping the early link",
                metadata: ["reader": "\(reader)", "error": "\(error)"])
            resources.standing.removeValue(forKey: link)?.stop()
            releaseLink(reader)
            return false
        }
    }

    private func standingEnded(_ reader: ReaderID, link: LinkMachine.ID) {
        if standingRun(reader, link: link) != nil {
            feed(reader, .disconnected)
        } else if resources.standing.removeValue(forKey: link) != nil {
            releaseLink(reader)
        }
    }

    private func standingWriteFailed(_ reader: ReaderID, link: LinkMachine.ID) {
        guard let run = standingRun(reader, link: link), !run.session.isFinished else { return }
        end(reader, .failed(.remoteClose))
    }

    /// The held link the exchange `run` took over is up: the exchange runs over its standing
    /// subscription if it has one (the session answers the newest challenge at `connected`),
    /// else connects (answered at once), resolves and subscribes as usual.
    func handOver(_ link: LinkMachine.ID, to runID: UInt64) {
        guard let state = links.links[link], let reader = state.owner?.reader, runs[reader]?.id == runID else { return }
        guard let standing = resources.standing.removeValue(forKey: link) else {
            runs[reader]?.link = Task { [connectTimeout = settings.connectTimeout] in
                await self.runLink(
                    reader, id: runID, link: link, devicePath: state.device, connectTimeout: connectTimeout)
            }
            return
        }
        let now = ContinuousClock.now
        let handover = standing.challenge.handover(at: Clocks.monotonic())
        runs[reader]?.session.takeOver(handover)
        runs[reader]?.writes = standing.writes
        runs[reader]?.writer = standing.writer
        runs[reader]?.standingReading = standing.reading
        runs[reader]?.phases.connected = now
        runs[reader]?.phases.resolved = now
        logger.info(
            "exchange over the standing link",
            metadata: ["reader": "\(reader)", "challenge": "\(handover.nonce == nil ? "awaited" : "at hand")"])
        if let mtu = standing.controlPoint.mtu {
            runs[reader]?.phases.mtu = mtu
            feed(reader, .mtuChanged(mtu))
        }
        feed(reader, .connected)
    }
}
