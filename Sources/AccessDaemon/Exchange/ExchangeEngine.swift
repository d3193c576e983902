import AccessCore
import AccessJSON
import BlueZ
import ControlSocket
import Logging

/// The exchange engine: runs the credential side of the reader protocol over a link for each
/// exchange the access engine orders, holds the link `connect_early` prepares, and answers
/// the second factor. It reports every exchange's end back to the access engine.
///
/// Its methods never suspend: each input is handled whole, in order. BlueZ is called from
/// each exchange's own tasks (the link task connects, subscribes and reads notifications;
/// the writer task writes fragments in order), which feed what they learn back in; a run's
/// `id` keeps a late callback of a finished exchange away from the next one.
actor ExchangeEngine {
    let central: any BluetoothCentral
    let book: CredentialBook
    let journal: EventJournal
    var settings: ExchangeSettings
    let reports: AccessEngine.Door
    /// Where PINs are checked: never on the engine, nor the cooperative pool.
    let keys: KeyDerivation
    let clock: any Clock<Duration>
    let logger: Logger
    var runs: [ReaderID: ExchangeRun] = [:] {
        didSet { activity.set(runs.count) }
    }
    let activity = ExchangeActivity()
    /// Every link's owner and the order of its calls (`LinkMachine`), and what the shell
    /// keeps of them.
    var links = LinkMachine()
    var resources = LinkResources()
    /// Disconnections BlueZ reported, per device: a Disconnect is complete for the next
    /// exchange only once its own report has come through (`disconnectionReported`).
    var dropsReported: [String: Int] = [:]
    var replayGuard = ChallengeReplayGuard()
    var nextID: UInt64 = 0

    init(
        central: any BluetoothCentral, book: CredentialBook, journal: EventJournal, settings: ExchangeSettings,
        reports: AccessEngine.Door, keys: KeyDerivation, clock: any Clock<Duration>, logger: Logger
    ) {
        self.keys = keys
        self.central = central
        self.book = book
        self.journal = journal
        self.settings = settings
        self.reports = reports
        self.clock = clock
        self.logger = logger
    }

    /// Performs commands until the stream ends or the task is cancelled, then drops every link.
    func run(commands: Door) async {
        for await command in commands {
            switch command {
            case .start(let order): start(order)
            case .abort(let reader): end(reader, .failed(.timedOut))
            case .holdLink(let reader, let devicePath): holdLink(reader, devicePath: devicePath)
            case .releaseLink(let reader): releaseLink(reader)
            case .linkDropped(let devicePath): linkDropped(devicePath)
            case .reconfigure(let settings): self.settings = settings
            }
        }
        await shutDown()
    }

    // MARK: Exchanges

    private func start(_ order: ExchangeOrder) {
        let reader = order.reader.id
        guard
            let (presentation, credential, siteKey) = book.presentation(
                for: order.reader, aperioEnabled: settings.aperioEnabled,
                only: order.credential)
        else {
            // The controller checked availability; a credential changed meanwhile.
            reports.yield(.exchangeEnded(reader, .failed(.invalidatedCredential), timings: nil))
            return
        }
        let session = CredentialSession(
            readerID: reader, siteTag: order.reader.siteTag, sitePublicKey: siteKey, presentation: presentation,
            operation: order.operation,
            timeouts: ProtocolTimeouts(step: settings.stepTimeout, secondFactor: settings.secondFactorTimeout),
            certificates: certificateTrust(siteKey: siteKey, siteTag: order.reader.siteTag))
        nextID += 1
        var run = ExchangeRun(
            id: nextID, session: session, origin: order.origin, credential: credential,
            devicePath: order.devicePath, phases: ExchangePhases(detected: order.detected))
        run.readerName = order.reader.name
        let name = order.reader.name.flatMap { $0.isEmpty ? nil : $0 }
        journal.emit(
            AccessStartedEvent(
                reader: reader.description, readerName: name, origin: Render.origin(order.origin),
                trigger: order.trigger, operation: Render.operationName(order.operation),
                credential: credential.description))
        logger.info("exchange starting", metadata: ["reader": "\(reader)", "device": "\(order.devicePath)"])
        // The link connected early for this reader is taken over (BlueZ answers Connect on a
        // connected device at once); else the exchange's own link connects once the device's
        // last Disconnect is done (`LinkMachine`).
        runs[reader] = run
        if resources.heldReader?.id == reader { resources.heldReader = nil }
        perform(links.handle(.exchange(reader, device: order.devicePath, run: run.id)))
    }

    /// Feeds the session one input and performs what it returns, in order. A second-factor
    /// request can answer at once (no PIN set, locked out): that answer is fed next.
    func feed(_ reader: ReaderID, _ input: CredentialSession.Input) {
        var inputs = [input]
        while !inputs.isEmpty {
            guard var run = runs[reader] else { return }
            let actions = run.session.handle(inputs.removeFirst(), replayGuard: &replayGuard)
            runs[reader] = run
            for action in actions {
                guard runs[reader]?.id == run.id else { return }
                switch action {
                case .send(let fragments):
                    for fragment in fragments { runs[reader]?.writes?.yield(fragment) }
                case .startTimer(let delay):
                    startStepTimer(reader, after: delay)
                case .cancelTimer:
                    runs[reader]?.stepTimer?.cancel()
                    runs[reader]?.stepTimer = nil
                case .requestSecondFactor:
                    if let answer = promptSecondFactor(reader) { inputs.append(answer) }
                case .finish(let outcome):
                    end(reader, outcome)
                }
            }
        }
    }

    private func startStepTimer(_ reader: ReaderID, after delay: Duration) {
        guard let run = runs[reader] else { return }
        run.stepTimer?.cancel()
        nextID += 1
        let timerID = nextID
        let runID = run.id
        runs[reader]?.stepTimerID = timerID
        runs[reader]?.stepTimer = Task { [clock] in
            do { try await clock.sleep(for: delay) } catch { return }
            self.stepTimerFired(reader, run: runID, timer: timerID)
        }
    }

    private func stepTimerFired(_ reader: ReaderID, run: UInt64, timer: UInt64) {
        guard let current = runs[reader], current.id == run, current.stepTimerID == timer else { return }
        runs[reader]?.stepTimer = nil
        feed(reader, .timerFired)
    }

    /// Ends an exchange once: stops its tasks, drops the link after its last writes, reports.
    func end(_ reader: ReaderID, _ outcome: ExchangeOutcome) {
        guard let run = runs.removeValue(forKey: reader) else { return }
        run.stepTimer?.cancel()
        run.link?.cancel()
        run.standingReading?.cancel()
        run.writes?.finish()
        let timings = run.phases.timings(endedAt: ContinuousClock.now)
        // The stable names access.completed carries, never a Swift value's description.
        let rendered = Render.exchange(reader, origin: run.origin, outcome: outcome, timings: nil)
        var metadata: Logger.Metadata = [
            "reader": "\(reader)", "outcome": "\(rendered.outcome)", "timings": "\(Render.json(timings).jsonText)",
        ]
        if let decision = rendered.decision { metadata["decision"] = "\(decision)" }
        if let error = rendered.error { metadata["error"] = "\(error)" }
        // Which check failed, where the outcome names only its class (a refused controller
        // certificate is `badReaderSignature`: expired, withdrawn, another reader's...).
        if let detail = run.session.abandonedWith { metadata["detail"] = "\(detail)" }
        logger.info("exchange ended", metadata: metadata)
        // Dropped in the background, after the last writes, so the decision is reported at
        // once. BlueZ reports the link going down after Disconnect returns, through the event
        // stream: reported after the next exchange's link was up, it ended that exchange as a
        // remote close (requests back to back at one reader). So the device's next Connect
        // waits for the report too, when there will be one: the link was up and did not drop
        // itself.
        if let link = links.link(ofRun: run.id), link.phase != .waiting {
            let reportWillCome = run.phases.connected != nil && outcome != .failed(.remoteClose)
            resources.closing[link.id] = (run.writer, reportWillCome)
        }
        perform(links.handle(.exchangeEnded(run: run.id)))
        reports.yield(.exchangeEnded(reader, outcome, timings: timings, credential: run.credential))
    }

    /// BlueZ says the device is gone or disconnected: exchanges whose link was up hear it.
    /// Counted only for devices this engine has a link with or is disconnecting: every phone
    /// and beacon BlueZ forgets passes here, and each kept a key for the life of the process
    /// (issue #31).
    private func linkDropped(_ devicePath: String) {
        guard links.isLinked(devicePath) else { return }
        dropsReported[devicePath, default: 0] += 1
        for (reader, run) in runs where run.devicePath == devicePath && run.writes != nil {
            logger.info("reader dropped the link", metadata: ["reader": "\(reader)"])
            feed(reader, .disconnected)
        }
    }

    /// Returns once a disconnection of the device beyond `count` has been reported, or after
    /// half a second (a Disconnect of a link already gone reports nothing).
    nonisolated func disconnectionReported(_ devicePath: String, after count: Int) async {
        for _ in 0..<50 {
            if await dropsReported[devicePath, default: 0] > count { return }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    static func failure(for error: BlueZError) -> ExchangeFailure {
        switch error {
        case .doesNotExist, .serviceUnknown: .deviceNotFound
        case .inProgress, .notReady: .adapterBusy
        case .timeout: .timedOut
        case .disconnected: .remoteClose
        default: .connectionAborted
        }
    }

    // MARK: Stopping

    /// Drops every link accessd opened or is opening. bluetoothd does not cancel a Connect
    /// whose caller left the bus: it would keep connecting to the reader for a daemon that is
    /// gone, and a connection attempt that then fails with its socket still open has crashed
    /// the Bluetooth stack of Linux 6.1 (a kernel BUG in `hci_chan_del`, seen in the lab).
    /// Waits for bluetoothd's answers at most `grace`, so stopping stays quick.
    func shutDown(grace: Duration = .seconds(3)) async {
        let pending = dropEverything(grace: grace)
        guard !pending.isEmpty else { return }
        // Not cancelled with the service's task, so the disconnects are sent and awaited.
        await Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { for task in pending { await task.value } }
                group.addTask { try? await Task.sleep(for: grace) }
                await group.next()
                group.cancelAll()
            }
        }.value
    }

    private func dropEverything(grace: Duration) -> [Task<Void, Never>] {
        var pending = Array(resources.disconnecting.values)
        for standing in resources.standing.values { standing.stop() }
        resources = LinkResources()
        for run in runs.values {
            run.link?.cancel()
            run.standingReading?.cancel()
            run.stepTimer?.cancel()
            run.writes?.finish()
        }
        runs.removeAll()
        for device in links.dropAll() {
            logger.info("dropping the link on stop", metadata: ["device": "\(device)"])
            pending.append(Task { [central] in try? await central.disconnect(device: device, timeout: grace) })
        }
        return pending
    }
}
