import AccessCore
import AccessJSON
import ControlSocket

/// Open the next door (`access.next`, `access.cancel`, a push-button): the controller's
/// window, its `access.next` events, and the readers already heard judged at once.
extension AccessEngine {
    /// The bounds of `expiry` (seconds): the SDK's use is a few seconds; a minute at most, so a
    /// forgotten window cannot open a door someone walks past much later.
    static let openNextExpiry = 1...60

    /// Opens (or extends) the window for `expiry`; `openedBy` is `socket` or `button`. Readers
    /// heard now are judged at once: a person pressing the button at the door is already there.
    @discardableResult
    func openNext(expiry: Duration?, openedBy: String, uid: UInt32?) -> Duration {
        let expiry = expiry ?? openNextDefaultExpiry
        let now = Clocks.monotonic()
        openNextOpenedBy = openedBy
        journal.emit(
            AccessNextWindowEvent(
                state: .open, openedBy: openedBy, expirySeconds: Int(expiry.components.seconds),
                uid: uid.map(Int.init)))
        logger.info("open-next window opened", metadata: ["expiry": "\(expiry)", "by": "\(openedBy)"])
        perform(controller.handle(.openNext(expiry: expiry), at: now))
        for reader in sightings.registry.readers where controller.automatic.openNextUntil != nil {
            judge(reader, at: now)
        }
        return expiry
    }

    /// Closes the window: whether one was open.
    func cancelOpenNext() -> Bool {
        guard controller.automatic.openNextUntil != nil else { return false }
        perform(controller.handle(.cancelOpenNext, at: Clocks.monotonic()))
        return true
    }

    func openNextClosed(_ end: AutoConnectMachine.OpenNextEnd) {
        var event = AccessNextWindowEvent(state: .closed, openedBy: openNextOpenedBy ?? "socket")
        switch end {
        case .used(let reader):
            openNextReaders.insert(reader)
            event.reason = .used
            event.reader = reader.description
        case .expired: event.reason = .expired
        case .cancelled: event.reason = .cancelled
        }
        openNextOpenedBy = nil
        journal.emit(event)
        logger.info("open-next window closed", metadata: ["reason": "\(event.reason?.rawValue ?? "?")"])
    }
}
