import AccessCore
import BlueZ
import ControlSocket
import Logging

/// The access engine: what is heard of readers (the registry), and the core's
/// `AccessController`, which decides when to connect on its own and whether a manual
/// request may start. It performs the controller's actions: exchanges and held links are
/// ordered from the exchange engine, timers run on the clock, manual requests are answered.
///
/// Inputs come through its door (an ordered stream: discovery's reports, the exchange
/// engine's, the timers') and through the control API's calls; none of its methods suspends.
actor AccessEngine {
    enum Input: Sendable {
        /// The adapter in use (nil: none); readers are on its device paths.
        case adapter(String?)
        case advertised(DeviceState)
        /// Scanning stopped or the adapter went: every reader is unavailable.
        case forgetReaders
        /// Once a second: readers not heard for too long expire; reader health's interval may
        /// end. `listening`: discovery runs and the radio is not being recovered.
        case tick(listening: Bool)
        /// `credential`: the one presented, when the exchange got as far as choosing it.
        case exchangeEnded(ReaderID, ExchangeOutcome, timings: ExchangeTimings?, credential: CredentialID? = nil)
        case linkPrepared(ReaderID)
        /// A person is typing a PIN: the manual request's timeout gives way to the reader's.
        case secondFactorPrompted(ExchangeOrigin)
        case credentialsChanged(CredentialAvailability)
        case timerFired(AccessController.Timer, id: UInt64)
        /// A reload (SIGHUP): the range and access settings a running engine can take.
        case reconfigure(AccessdConfiguration)
        /// The open-next button was pressed (`[button]`).
        case buttonPressed
    }

    /// Inputs in order; a device's advertisements merge while they wait (`CoalescingQueue`).
    typealias Door = CoalescingQueue<Input>
    /// Inputs that may wait: a reader's advertisements count once, the rest (timers, reports,
    /// adapter changes) come a few per reader or request; past it an input is dropped and
    /// counted (`accessd_door_inputs_dropped_total`).
    static let doorCapacity = 8192

    struct Status: Sendable {
        var readerCount: Int
        var refusedAdvertisements: Int
        var automaticAccessEnabled: Bool
        var seenAdvertisements = 0
        var readersInAutoRange = 0
    }

    let door: Door
    let exchanges: ExchangeEngine.Door
    let journal: EventJournal
    let clock: any Clock<Duration>
    let logger: Logger
    var sightings: ReaderSightings
    /// Each reader's health, published as `reader.health` events (docs/fleet.md).
    var health: ReaderHealthBook
    var controller: AccessController
    var adapterPath: String?
    var timers: [AccessController.Timer: (id: UInt64, task: Task<Void, Never>)] = [:]
    var requests = ManualRequests()
    /// Whether the registry's capacity was reported full (until there is room again).
    var registryFullWarned = false
    /// Readers whose automatic exchange an open-next window started, until it completes.
    var openNextReaders: Set<ReaderID> = []
    /// Who opened the current open-next window (`socket` or `button`), for its events.
    var openNextOpenedBy: String?
    /// `[access] open_next_expiry`: the window's length when the caller names none.
    var openNextDefaultExpiry: Duration
    let connectEarly: Bool
    /// `readers.probe` under way.
    var probes: [UInt64: RunningProbe] = [:]
    var nextProbe: UInt64 = 0

    init(
        configuration: AccessdConfiguration, automaticAccessEnabled: Bool, scope: ReaderScope = ReaderScope(),
        door: Door,
        exchanges: ExchangeEngine.Door, journal: EventJournal, clock: any Clock<Duration>,
        logger: Logger
    ) {
        self.door = door
        self.exchanges = exchanges
        self.journal = journal
        self.clock = clock
        self.logger = logger
        self.connectEarly = configuration.connectEarly
        self.openNextDefaultExpiry = configuration.openNextExpiry
        self.sightings = ReaderSightings(range: configuration.rangeConfiguration)
        self.health = ReaderHealthBook(policy: ReaderHealthPolicy(interval: configuration.healthInterval))
        _ = sightings.registry.setScope(scope)
        self.controller = AccessController(
            slotLimit: configuration.connectionLimit,
            automatic: configuration.autoConnectConfiguration,
            manual: .init(timeout: configuration.manualTimeout),
            automaticAccessEnabled: automaticAccessEnabled, credentials: .none)
    }

    /// Handles the door's inputs until the stream ends or the task is cancelled; then answers
    /// every pending request, and every later one, `shuttingDown`, and stops the timers.
    func run(inputs: Door) async {
        for await input in inputs { handle(input) }
        requests.pending.close()
        for timer in timers.values { timer.task.cancel() }
        timers.removeAll()
    }

    private func handle(_ input: Input) {
        let now = Clocks.monotonic()
        switch input {
        case .adapter(let path):
            adapterPath = path
        case .advertised(let device):
            advertised(device, at: now)
        case .forgetReaders:
            health.listening(false)
            for id in sightings.removeAll() { readerGone(id, at: now) }
        case .tick(let listening):
            let linked = Set(controller.slots.active.keys)
            for id in sightings.expire(at: now, linked: linked) { readerGone(id, at: now) }
            health.listening(listening)
            for record in health.tick(at: now, linked: linked) { journal.emit(Render.health(record)) }
        case .exchangeEnded(let reader, let outcome, let timings, let credential):
            if let result = ReaderExchangeResult(outcome, phase: .init(timings)) { health.exchanged(reader, result) }
            requests.credentials[reader] = credential
            if let (request, error) = requests.timedOut.removeValue(forKey: reader) {
                timedOutExchangeEnded(reader, request: request, error: error, outcome: outcome, timings: timings)
            } else if let timings {
                requests.timings[reader] = timings
            }
            perform(controller.handle(.exchangeEnded(reader, outcome), at: now))
        case .linkPrepared(let reader):
            perform(controller.handle(.linkPrepared(reader), at: now))
        case .secondFactorPrompted(.manual(let request)):
            timers.removeValue(forKey: .manual(request))?.task.cancel()
        case .secondFactorPrompted(.automatic):
            break
        case .credentialsChanged(let availability):
            guard availability != controller.credentials else { return }
            perform(controller.handle(.credentialsChanged(availability), at: now))
        case .timerFired(let timer, let id):
            guard timers[timer]?.id == id else { return }  // cancelled while it fired
            timers[timer] = nil
            perform(controller.handle(.timerFired(timer), at: now))
        case .buttonPressed:
            openNext(expiry: nil, openedBy: "button", uid: nil)
        case .reconfigure(let configuration):
            // Each reader's smoothed path loss stays; the next advertisement is judged by the new range.
            sightings.registry.range = configuration.rangeConfiguration
            openNextDefaultExpiry = configuration.openNextExpiry
            var scope = sightings.registry.scope
            scope.replaceConfiguration(configuration.readerRules)
            apply(scope)
            controller.reconfigure(
                automatic: configuration.autoConnectConfiguration,
                manual: .init(timeout: configuration.manualTimeout))
        }
    }

    // MARK: Readers

    private func advertised(_ device: DeviceState, at now: Timestamp) {
        guard device.adapterPath == adapterPath else { return }
        var full = false
        guard
            let sighting = sightings.observe(
                device, at: now,
                refusal: { error in
                    if case .tooManyReaders = error { full = true }
                    logger.debug(
                        "advertisement refused",
                        metadata: [
                            "address": "\(device.address.map(\.description) ?? "?")",
                            "error": "\(error.code)",
                        ])
                })
        else {
            // Once per episode: a flood of new reader ids is the one sign of it worth a warning.
            if full && !registryFullWarned {
                registryFullWarned = true
                logger.warning(
                    "new readers refused: \(ReaderRegistry.capacity) readers are tracked",
                    metadata: ["limit": "\(ReaderRegistry.capacity)"])
            }
            return
        }
        if registryFullWarned && !sightings.registry.isFull { registryFullWarned = false }
        let id = sighting.advertisement.readerID
        let observation = sighting.observation
        health.heard(id, pathLoss: sighting.pathLoss, reports: sighting.reports, name: device.preferredName, at: now)
        probeHeard(id, at: now)
        if let update = observation.update { journal.emit(Render.reader(update)) }
        if sighting.advertisement.flags.contains(.presence), controller.automatic.preparedReader == id {
            perform(controller.handle(.presenceHeard(id), at: now))
        }
        if observation.becameUnavailable { journal.emit(ReaderUnavailableEvent(reader: id.description)) }
        // Out of auto range the controller hears only of changes worth a report, which is
        // enough to connect early (an approach moves the path loss).
        let nearby = connectEarly && observation.update != nil
        let openingNext = controller.automatic.openNextUntil != nil
        if observation.isInAutoConnectRange || observation.autoConnectRangeChanged || nearby || openingNext,
            let attributes = sightings.registry.reader(id)
        {
            perform(
                controller.handle(
                    .readerObserved(
                        attributes, isInAutoConnectRange: observation.isInAutoConnectRange,
                        othersHeard: sightings.registry.isAnotherReaderHeard(besides: id)),
                    at: now))
        }
    }

    private func readerGone(_ id: ReaderID, at now: Timestamp) {
        journal.emit(ReaderUnavailableEvent(reader: id.description))
        perform(controller.handle(.readerUnavailable(id), at: now))
    }

    // MARK: The control API's calls

    var readers: [ReaderAttributes] { sightings.registry.readers }

    func reader(_ id: ReaderID) -> ReaderAttributes? { sightings.registry.reader(id) }

    var status: Status {
        Status(
            readerCount: sightings.registry.count, refusedAdvertisements: sightings.refused,
            automaticAccessEnabled: controller.automatic.isAutomaticAccessEnabled, seenAdvertisements: sightings.seen,
            readersInAutoRange: sightings.registry.countInAutoConnectRange)
    }

    func setAutomaticAccess(_ enabled: Bool) {
        perform(controller.handle(.automaticAccessChanged(enabled), at: Clocks.monotonic()))
    }

    /// `access.request`, `actions.list`, `actions.perform`: the controller decides whether
    /// the request may start; the answer comes when its exchange ends (or its timeout).
    func request(
        _ reader: ReaderID, _ operation: ExchangeOperation, uid: UInt32,
        credential: CredentialID? = nil
    ) async -> Result<ExchangeAnswer, RPCError> {
        let request = requests.next()
        logger.info("manual request", metadata: ["reader": "\(reader)", "operation": "\(operation)", "uid": "\(uid)"])
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // A caller already cancelled (its client gone, the socket stopping) starts nothing.
                guard !Task.isCancelled else { return continuation.resume(returning: PendingAnswers.shuttingDown) }
                guard requests.pending.wait(request.rawValue, continuation) else { return }
                requests.asked[request] = (reader, operation)
                if let credential { requests.presenting[request] = credential }
                perform(
                    controller.handle(
                        .request(request, reader, operation, reader: sightings.registry.reader(reader)),
                        at: Clocks.monotonic()))
            }
        } onCancel: {
            Task { await self.abandon(request) }
        }
    }

    /// The caller of `request` was cancelled: it is answered now; its exchange, if one
    /// started, runs to its end and is journalled as usual.
    private func abandon(_ request: RequestID) {
        requests.answer(request, PendingAnswers.shuttingDown)
    }
}
