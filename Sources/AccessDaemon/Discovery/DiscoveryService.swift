import AccessCore
import BlueZ
import ControlSocket
import Logging

/// Follows BlueZ: which adapter to use, whether bluetoothd and the adapter are there (the
/// SDK state), and discovery, driven by the core's `DiscoveryMachine`. Device reports go on to
/// the access engine (advertisements) and the exchange engine (links dropped).
///
/// Its handlers never suspend; a BlueZ call the machine asks for runs on a task of its own
/// and its end is fed back to the machine.
actor DiscoveryService {
    let central: any BluetoothCentral
    let sdk: SdkStatePublisher
    /// For the recovery ladder's `radio.recovery` events.
    let journal: EventJournal
    let access: AccessEngine.Door
    let exchanges: ExchangeEngine.Door
    let clock: any Clock<Duration>
    let logger: Logger
    /// Which adapter to scan on (`DiscoveryService+Adapters`).
    var selection: AdapterSelection
    var machine = DiscoveryMachine()
    /// The radio's recovery ladder (`DiscoveryService+Recovery`).
    var recovery: RadioRecovery
    let exchangeActivity: ExchangeActivity
    /// The recovery ladder's time: `clock`'s, so a test's virtual clock drives it.
    let recoveryTime: @Sendable () -> Timestamp
    /// `[bluetooth] radio_recovery`.
    let recoveryEnabled: Bool
    /// During a power cycle of ours: the adapter was reported off.
    var powerCycleSawOff = false
    var adapters: [String: AdapterState] = [:]
    /// Moves of scanning from one adapter to another since start, by reason (the
    /// `switchedAdapter` event's): for the metrics, where a fleet counts them.
    var adapterSwitches: [String: Int] = [:]
    /// bluetoothd's objects have all been reported (`serviceAppeared`), so an adapter can be
    /// chosen among all of them.
    var serviceReported = false
    var adapterPath: String?
    /// Why the adapter in use cannot do the job (`AdapterFitness`), reported in `status.get`.
    var unfitReason: String? {
        adapterPath.flatMap { adapters[$0] }.flatMap { AdapterFitness.problem(roles: $0.roles) }
    }
    var scanningEnabled: Bool

    init(
        central: any BluetoothCentral, configuration: AccessdConfiguration, scanningEnabled: Bool,
        sdk: SdkStatePublisher, journal: EventJournal, access: AccessEngine.Door, exchanges: ExchangeEngine.Door,
        exchangeActivity: ExchangeActivity, clock: any Clock<Duration>, logger: Logger
    ) {
        self.central = central
        self.sdk = sdk
        self.journal = journal
        self.access = access
        self.exchanges = exchanges
        self.clock = clock
        self.logger = logger
        self.selection = AdapterSelection(policy: AdapterSelection.Policy(order: configuration.adapterOrder))
        self.recovery = RadioRecovery(limits: RadioRecovery.Limits(silenceAtAll: configuration.discoveryWatchdog))
        self.exchangeActivity = exchangeActivity
        self.recoveryTime = Clocks.timeSource(clock)
        self.recoveryEnabled = configuration.radioRecovery
        self.scanningEnabled = scanningEnabled
    }

    /// Follows BlueZ until cancelled.
    func run() async throws {
        try await central.start()
        // The state at start is journalled once, when bluetoothd's presence is known: when it
        // is there, handling the queued serviceAppeared journals it; when not, nothing will
        // come, so it is journalled as it stands. (Announcing before start journalled
        // bluetoothServiceUnavailable on every start, then the real state: issue #12.)
        if await !central.isServicePresent { sdk.announce() }
        let events = central.events
        try await consumeWhileTicking(clock: clock) {
            for await event in events { await self.handle(event) }
        } tick: {
            await self.tick()
        }
    }

    var adapterName: String? { adapterPath.map { String($0.split(separator: "/").last ?? "") } }

    /// For `status.get`, in one hop.
    var scanningAndAdapter: (Bool, String?, RadioStatus) { (scanningEnabled, adapterName, radioStatus) }

    /// `scanning.set` (already saved): discovery follows, and readers are forgotten when off.
    func setScanning(_ enabled: Bool) {
        scanningEnabled = enabled
        if !enabled { access.yield(.forgetReaders) }
        updateSdk { $0.scanningEnabled = enabled }
    }

    private func handle(_ event: BlueZEvent) {
        switch event {
        case .serviceAppeared:
            logger.notice("bluetoothd is on the bus")
            updateSdk { $0.bluetoothServicePresent = true }
            serviceReported = true
            reselect()
        case .serviceVanished:
            logger.warning("bluetoothd left the bus; waiting for it to come back")
            adapters.removeAll()
            serviceReported = false
            reselect()
            updateSdk {
                $0.bluetoothServicePresent = false
                $0.adapterPresent = false
                $0.adapterUnfit = false
                $0.discoveryRunning = false
            }
        case .adapterAdded(let adapter), .adapterChanged(let adapter):
            adapters[adapter.path] = adapter
            // bluetoothd's adapters at start come one by one (by path), then serviceAppeared:
            // choosing at the first would take hci0 before a preferred hci1 is known.
            if serviceReported { reselect() }
            guard adapter.path == adapterPath else { return }
            if !adapter.powered { access.yield(.forgetReaders) }
            adopt(adapter)
        case .adapterRemoved(let path):
            adapters[path] = nil
            if path == adapterPath { logger.warning("adapter removed", metadata: ["adapter": "\(path)"]) }
            reselect()
        case .deviceAdvertised(let device):
            guard scanningEnabled, device.adapterPath == adapterPath else { return }
            // Only readers go on: a lobby's phones and beacons stop here (the BlueZ client
            // filters them already; another central may not).
            let reader = device.serviceData[ReaderAdvertisement.serviceDataUUIDString] != nil
            heard(reader: reader)
            guard reader else { return }
            access.yield(.advertised(device))
        case .othersHeard:
            // Not readers, but the radio hears: the recovery ladder wants no more.
            guard scanningEnabled, adapterPath != nil else { return }
            heard(reader: false)
        case .deviceConnectionChanged(let device):
            if !device.connected { exchanges.yield(.linkDropped(devicePath: device.path)) }
        case .deviceRemoved(let path):
            exchanges.yield(.linkDropped(devicePath: path))
        }
    }

    func use(_ path: String?) {
        let leaving = adapterPath != nil && path != adapterPath
        if leaving { access.yield(.forgetReaders) }
        adapterPath = path
        access.yield(.adapter(path))
        // The machine leaves the old adapter before the new one's conditions reach it: taking
        // a fit adapter in place of an unfit one otherwise started discovery on the unfit one.
        if leaving || path == nil { drive(.adapterChanged(path: nil, discovering: false)) }
    }

    /// The SDK state follows the adapter in use; discovery follows the SDK state.
    func adopt(_ adapter: AdapterState) {
        let problem = AdapterFitness.problem(roles: adapter.roles)
        // Once when it becomes unfit, not at each of its property changes.
        if let problem, !sdk.inputs.adapterUnfit {
            logger.warning("adapter not usable", metadata: ["adapter": "\(adapter.name)", "reason": "\(problem)"])
        }
        updateSdk {
            $0.adapterPresent = true
            $0.adapterUnfit = problem != nil
            $0.adapterPowered = adapter.powered
            $0.adapterBlocked = adapter.isBlocked
            $0.discoveryRunning = adapter.discovering
        }
        drive(.adapterChanged(path: adapter.path, discovering: adapter.discovering))
        powerCycleObserved(adapter)
    }

    /// Every change of the SDK state's inputs may allow or forbid scanning.
    func updateSdk(_ change: (inout SdkStateInputs) -> Void) {
        sdk.update(change)
        drive(conditions())
        recovery.conditions(
            canListen: scanningEnabled && adapterPath != nil && SdkState.canScan(sdk.inputs), at: recoveryTime())
    }

    private func conditions() -> DiscoveryMachine.Input {
        .conditionsChanged(scanningEnabled: scanningEnabled, canScan: SdkState.canScan(sdk.inputs))
    }

    private func tick() {
        drive(.tick)
        reselect()
        recoveryTick()
        let listening = scanningEnabled && sdk.current.isScanning && !recovery.isRecovering
        access.yield(.tick(listening: listening))
    }

    // MARK: BlueZ calls

    func drive(_ input: DiscoveryMachine.Input) {
        for action in machine.handle(input, at: Clocks.monotonic()) {
            switch action {
            case .start(let adapter):
                Task { [central] in
                    let result: DiscoveryMachine.StartResult
                    do throws(BlueZError) {
                        try await central.setDiscoveryFilter(
                            adapter: adapter, DiscoveryFilter(transport: "le", duplicateData: true))
                        try await central.startDiscovery(adapter: adapter)
                        result = .started
                    } catch .inProgress {
                        result = .alreadyInProgress
                    } catch {
                        self.startFailed(adapter, error)
                        result = .failed
                    }
                    self.callFinished(.startFinished(result), adapter: adapter)
                }
            case .stop(let adapter):
                Task { [central] in
                    do throws(BlueZError) {
                        try await central.stopDiscovery(adapter: adapter)
                    } catch {
                        self.logStopFailure(error)
                    }
                    self.callFinished(.stopFinished, adapter: adapter)
                }
            }
        }
    }

    private func callFinished(_ input: DiscoveryMachine.Input, adapter: String) {
        switch input {
        case .startFinished(.started): logger.info("discovery started", metadata: ["adapter": "\(adapter)"])
        case .startFinished(.alreadyInProgress): logger.debug("discovery already in progress")
        case .stopFinished: logger.info("discovery stopped", metadata: ["adapter": "\(adapter)"])
        default: break
        }
        drive(input)
    }

    private func startFailed(_ adapter: String, _ error: BlueZError) {
        logger.warning("cannot start discovery", metadata: ["adapter": "\(adapter)", "error": "\(error)"])
        if case .accessDenied = error {
            updateSdk { $0.permissionGranted = false }
        }
    }

    private func logStopFailure(_ error: BlueZError) {
        logger.warning("cannot stop discovery", metadata: ["error": "\(error)"])
    }
}
