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
        _ attributes: ReaderAttributes, devicePath: String,
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
            try await central.writeValue(
                characteristic: holdPoint.path, [ReaderGATT.standingVersion], type: .withResponse,
                timeout: await settings.stepTimeout)
            let notifications = try await central.notifications(characteristic: controlPoint.path)
            let challenge = StandingChallenge(readerID: reader, siteTag: attributes.siteTag, sitePublicKey: siteKey)
            await standing(
                reader, devicePath: devicePath, controlPoint: controlPoint, challenge: challenge,
                notifications: notifications)
        } catch {
            logger.info(
                "no standing challenge on the early link", metadata: ["reader": "\(reader)", "error": "\(error)"])
        }
    }

    private func standing(
        _ reader: ReaderID, devicePath: String, controlPoint: GattCharacteristicState,
        challenge: StandingChallenge, notifications: AsyncStream<[UInt8]>
    ) {
        // Released meanwhile: its Disconnect ends the subscription.
        guard let link = held, link.reader == reader, link.devicePath == devicePath else { return }
        let (continuation, writer) = writer(to: controlPoint.path) { engine in
            engine.standingWriteFailed(reader, devicePath: devicePath)
        }
        let reading = Task {
            for await fragment in notifications {
                guard self.standingFragment(reader, devicePath: devicePath, fragment) else { return }
            }
            self.standingEnded(reader, devicePath: devicePath)
        }
        held?.standing = StandingLink(
            challenge: challenge, controlPoint: controlPoint, writes: continuation,
            writer: writer, reading: reading)
        logger.info("challenge standing on the early link", metadata: ["reader": "\(reader)"])
    }

    /// A notification on a standing subscription: to the exchange that took it over, else to
    /// the standing challenge. False once neither wants more.
    private func standingFragment(_ reader: ReaderID, devicePath: String, _ fragment: [UInt8]) -> Bool {
        if let run = runs[reader], run.devicePath == devicePath, run.standingReading != nil {
            feed(reader, .fragmentReceived(fragment))
            return runs[reader]?.standingReading != nil
        }
        guard var link = held, link.reader == reader, link.devicePath == devicePath, var standing = link.standing else {
            return false
        }
        do throws(ProtocolError) {
            try standing.challenge.receive(fragment, at: Clocks.monotonic(), replayGuard: &replayGuard)
            link.standing = standing
            held = link
            return true
        } catch {
            // A forged or replayed challenge, or the reader's hold time ran out: the link
            // goes, and the exchange at the door connects afresh.
            logger.info(
                "standing challenge refused; dropping the early link",
                metadata: ["reader": "\(reader)", "error": "\(error)"])
            releaseLink(reader)
            return false
        }
    }

    private func standingEnded(_ reader: ReaderID, devicePath: String) {
        if let run = runs[reader], run.devicePath == devicePath, run.standingReading != nil {
            feed(reader, .disconnected)
        } else if let link = held, link.reader == reader, link.devicePath == devicePath, link.standing != nil {
            releaseLink(reader)
        }
    }

    private func standingWriteFailed(_ reader: ReaderID, devicePath: String) {
        guard let run = runs[reader], run.devicePath == devicePath, run.standingReading != nil,
            !run.session.isFinished
        else { return }
        end(reader, .failed(.remoteClose))
    }

    /// The exchange `id` takes over the held link, once it is up: true when it had a standing
    /// subscription, which the exchange now runs on (the session answers the newest challenge
    /// at `connected`), or when the exchange ended meanwhile (its end drops the link); false
    /// when the exchange must subscribe by itself.
    func takeHeldLink(_ reader: ReaderID, id: UInt64) -> Bool {
        guard let link = held, link.reader == reader else { return false }
        held = nil
        guard runs[reader]?.id == id else {
            link.standing?.stop()
            return true
        }
        guard let standing = link.standing else { return false }
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
        return true
    }
}
