import AccessCore
import AccessStore
import BlueZ
import ControlSocket
import Logging

/// The daemon's shell. It owns the core's state (registry, SDK state, access controller),
/// feeds it BlueZ events and socket requests, and performs what the core decides: keeping
/// discovery running while scanning is wanted and possible, journalling events and fanning
/// them out to subscribers. One actor, so every input is handled in order.
public actor AccessService: ControlRequestHandler {
    struct Subscription: Sendable {
        var kinds: Set<String>?
    }

    let configuration: AccessdConfiguration
    let store: AccessStore
    let bluez: BlueZClient
    let logLevel: LogLevelSetting
    var logger: Logger

    var registry: ReaderRegistry
    var sdk = SdkStateTracker()
    var controller: AccessController
    private var scanningEnabled: Bool
    private var automaticAccessEnabled: Bool
    var adapterPath: String?
    private var discoveryRequested = false
    /// A StartDiscovery or StopDiscovery call is under way: the actor may handle other
    /// events while it waits, and must neither start a second one nor mistake the
    /// PropertiesChanged of the transition for someone else stopping discovery.
    private var discoveryTransition = false
    private var lastAdvertisement: Timestamp?
    private var discoveryStartedAt: Timestamp?
    private var subscribers: [ControlClient: Subscription] = [:]
    /// Reader service data that failed to parse: a misconfigured or foreign reader nearby.
    private var refusedAdvertisements = 0
    private var lastPrune: Timestamp?
    /// The journal's newest sequence number, kept here so status.get does not read the database.
    private var lastSequence: Int64
    private let startedAt = Clocks.monotonic()

    // Credentials (AccessService+Credentials.swift).
    let site: SiteClient
    var credentials: [StoredCredential] = []
    var items: [StoredItem] = []
    var sync = SyncSchedule()
    /// Callers of syncAll waiting for the running sync to end, first come first served.
    var syncTurns: [CheckedContinuation<Void, Never>] = []
    /// Feature states as last emitted (`feature.state`), by feature name.
    var featureStates: [String: FeatureState] = [:]

    // Exchanges (AccessService+Exchanges.swift).
    var exchanges: [ReaderID: ExchangeRun] = [:]
    var controllerTimers: [AccessController.Timer: Task<Void, Never>] = [:]
    var pendingRequests: [RequestID: CheckedContinuation<Result<JSONValue, RPCError>, Never>] = [:]
    var secondFactorPrompts: [String: ReaderID] = [:]
    var pendingDisconnects: [String: Task<Void, Never>] = [:]
    /// Links connected early (`[access] connect_early`), by reader: the device, and the
    /// connect-and-resolve the exchange awaits before it goes on over the link.
    var preparedLinks: [ReaderID: (devicePath: String, ready: Task<Void, Never>)] = [:]
    var firstInRange: [ReaderID: ContinuousClock.Instant] = [:]
    var lastTimings: [ReaderID: JSONValue] = [:]
    var nextRequest: UInt64 = 0
    var replayGuard = ChallengeReplayGuard()

    public init(configuration: AccessdConfiguration, store: AccessStore, bluez: BlueZClient, site: SiteClient,
                logLevel: LogLevelSetting, logger: Logger) throws {
        self.configuration = configuration
        self.site = site
        self.store = store
        self.bluez = bluez
        self.logLevel = logLevel
        self.logger = logger
        self.registry = ReaderRegistry(range: configuration.rangeConfiguration)
        // Settings changed at run time win over the configuration's start values.
        let scanning = try store.boolSetting("scanning") ?? configuration.scanningOnStart
        let automatic = try store.boolSetting("automaticAccess") ?? configuration.automaticAccessOnStart
        self.scanningEnabled = scanning
        self.automaticAccessEnabled = automatic
        self.controller = AccessController(slotLimit: configuration.connectionLimit,
                                           automatic: configuration.autoConnectConfiguration,
                                           manual: .init(timeout: configuration.manualTimeout),
                                           automaticAccessEnabled: automatic, credentials: .none)
        self.credentials = try store.credentials()
        self.items = try store.items()
        var inputs = SdkStateInputs()
        inputs.scanningEnabled = scanning
        self.sdk = SdkStateTracker(inputs)
        self.lastSequence = try store.lastSequence()
    }

    // MARK: Running

    /// Follows BlueZ until cancelled.
    public func run() async throws {
        credentialsDidChange()
        emit("sdk.state", Render.sdkState(sdk.current))
        try await bluez.start()
        let events = bluez.events
        // However the service stops, nobody is left waiting for an exchange and no link is
        // left open or opening.
        do {
            try await follow(events)
        } catch {
            await shutDownExchanges()
            throw error
        }
        await shutDownExchanges()
    }

    private func follow(_ events: AsyncStream<BlueZEvent>) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events { await self.handle(event) }
            }
            group.addTask {
                while !Task.isCancelled {
                    try await Task.sleep(for: .seconds(1))
                    await self.tick()
                }
            }
            // Site syncs on their own task, so a slow site never delays the tick.
            group.addTask {
                while !Task.isCancelled {
                    try await Task.sleep(for: .seconds(1))
                    await self.syncIfDue()
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    private func handle(_ event: BlueZEvent) async {
        switch event {
        case .serviceAppeared:
            logger.notice("bluetoothd is on the bus")
            updateSdk { $0.bluetoothServicePresent = true }
            await chooseAdapter()
        case .serviceVanished:
            logger.warning("bluetoothd left the bus; waiting for it to come back")
            adapterPath = nil
            discoveryRequested = false
            forgetReaders()
            updateSdk {
                $0.bluetoothServicePresent = false
                $0.adapterPresent = false
                $0.discoveryRunning = false
            }
        case let .adapterAdded(adapter), let .adapterChanged(adapter):
            if adapterPath == nil { await chooseAdapter() }
            guard adapter.path == adapterPath else { return }
            if !adapter.discovering && !discoveryTransition { discoveryRequested = false }
            if !adapter.powered { forgetReaders() }
            await adopt(adapter)
        case let .adapterRemoved(path):
            guard path == adapterPath else { return }
            logger.warning("adapter removed", metadata: ["adapter": "\(path)"])
            adapterPath = nil
            discoveryRequested = false
            forgetReaders()
            updateSdk {
                $0.adapterPresent = false
                $0.discoveryRunning = false
            }
            await chooseAdapter()
        case let .deviceAdvertised(device):
            advertised(device)
        case let .deviceConnectionChanged(device):
            if !device.connected { await linkDropped(device: device.path) }
        case let .deviceRemoved(path):
            await linkDropped(device: path)
        }
    }

    private func chooseAdapter() async {
        let adapters = await bluez.adapters
        let wanted = configuration.adapter.map { "/org/bluez/" + $0 }
        let candidates = adapters.values.filter { wanted == nil || $0.path == wanted }
        guard let chosen = candidates.sorted(by: { ($0.powered ? 0 : 1, $0.path) < ($1.powered ? 0 : 1, $1.path) }).first else {
            if adapterPath == nil {
                updateSdk { $0.adapterPresent = false }
            }
            return
        }
        guard chosen.path != adapterPath else { return }
        adapterPath = chosen.path
        logger.notice("using adapter", metadata: ["adapter": "\(chosen.name)", "powered": "\(chosen.powered)"])
        await adopt(chosen)
    }

    /// The SDK state follows the adapter in use; discovery follows the SDK state.
    private func adopt(_ adapter: AdapterState) async {
        updateSdk {
            $0.adapterPresent = true
            $0.adapterPowered = adapter.powered
            $0.adapterBlocked = adapter.isBlocked
            $0.discoveryRunning = adapter.discovering
        }
        await ensureDiscovery()
    }

    /// Starts discovery when it is wanted and possible, stops it when it is not wanted.
    private func ensureDiscovery() async {
        guard let adapter = adapterPath, !discoveryTransition else { return }
        discoveryTransition = true
        defer { discoveryTransition = false }
        let inputs = sdk.inputs
        if scanningEnabled && SdkState.canScan(inputs) && !inputs.discoveryRunning && !discoveryRequested {
            discoveryRequested = true
            do {
                try await bluez.setDiscoveryFilter(adapter: adapter, DiscoveryFilter(transport: "le", duplicateData: true))
                try await bluez.startDiscovery(adapter: adapter)
                discoveryStartedAt = Clocks.monotonic()
                logger.info("discovery started", metadata: ["adapter": "\(adapter)"])
            } catch BlueZError.inProgress {
                // Someone else's discovery is running: ours is merged into it.
                logger.debug("discovery already in progress")
            } catch {
                discoveryRequested = false
                logger.warning("cannot start discovery", metadata: ["error": "\(error)"])
                if case .accessDenied = error { updateSdk { $0.permissionGranted = false } }
            }
        } else if !scanningEnabled && (inputs.discoveryRunning || discoveryRequested) {
            discoveryRequested = false
            do {
                try await bluez.stopDiscovery(adapter: adapter)
                logger.info("discovery stopped", metadata: ["adapter": "\(adapter)"])
            } catch {
                logger.warning("cannot stop discovery", metadata: ["error": "\(error)"])
            }
            forgetReaders()
        }
    }

    private func advertised(_ device: DeviceState) {
        guard device.adapterPath == adapterPath, scanningEnabled,
              let payload = device.serviceData[ReaderAdvertisement.serviceDataUUIDString], let rssi = device.rssi,
              let address = device.address
        else { return }
        let advertisement: ReaderAdvertisement
        do {
            advertisement = try ReaderAdvertisement(serviceData: payload)
        } catch {
            refusedAdvertisements += 1
            logger.debug("advertisement refused", metadata: ["address": "\(address)", "error": "\(error.code)"])
            return
        }
        let now = Clocks.monotonic()
        lastAdvertisement = now
        let raw = address.bytes
        let deviceAddress = DeviceAddress(rawValue: [raw.0, raw.1, raw.2, raw.3, raw.4, raw.5].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        let observation = registry.observe(advertisement, rssi: rssi, address: deviceAddress, name: device.name, at: now)
        // When this approach's first advertisement put the reader in auto range, unsmoothed:
        // where the "detection" part of an automatic exchange's timings starts.
        let rawPathLoss = Double(Int(advertisement.txPower) - Int(rssi)) + configuration.rangeConfiguration.sensitivityOffset
        if rawPathLoss <= Double(advertisement.autoConnectPathLoss) {
            if firstInRange[advertisement.readerID] == nil { firstInRange[advertisement.readerID] = ContinuousClock.now }
        } else if observation.autoConnectRangeChanged && !observation.isInAutoConnectRange {
            firstInRange[advertisement.readerID] = nil
        }
        if let update = observation.update { emit("reader.updated", Render.reader(update)) }
        if advertisement.flags.contains(.presence), preparedLinks[advertisement.readerID] != nil {
            perform(controller.handle(.presenceHeard(advertisement.readerID), at: now))
        }
        if observation.becameUnavailable {
            firstInRange[advertisement.readerID] = nil
            emit("reader.unavailable", ["id": .string(advertisement.readerID.description)])
        }
        // Out of auto range the controller hears only of changes worth a report, which is
        // enough to connect early (an approach moves the path loss).
        let nearby = configuration.connectEarly && observation.update != nil
        if observation.isInAutoConnectRange || observation.autoConnectRangeChanged || nearby,
           let attributes = registry.reader(advertisement.readerID) {
            perform(controller.handle(.readerObserved(attributes, isInAutoConnectRange: observation.isInAutoConnectRange,
                                                      othersHeard: registry.isAnotherReaderHeard(besides: advertisement.readerID)),
                                      at: now))
        }
    }

    private func forgetReaders() {
        for id in registry.removeAll() {
            firstInRange[id] = nil
            emit("reader.unavailable", ["id": .string(id.description)])
            perform(controller.handle(.readerUnavailable(id), at: Clocks.monotonic()))
        }
    }

    /// Once a second: stale readers, the discovery watchdog, journal retention.
    private func tick() async {
        let now = Clocks.monotonic()
        for id in registry.expire(at: now, linked: Set(exchanges.keys)) {
            firstInRange[id] = nil
            emit("reader.unavailable", ["id": .string(id.description)])
            perform(controller.handle(.readerUnavailable(id), at: now))
        }
        if sdk.inputs.discoveryRunning, discoveryRequested, let adapter = adapterPath {
            let quietSince = lastAdvertisement ?? discoveryStartedAt ?? now
            if now - quietSince >= configuration.discoveryWatchdog {
                logger.notice("no advertisement for a while: restarting discovery",
                              metadata: ["seconds": "\(configuration.discoveryWatchdog.components.seconds)"])
                lastAdvertisement = now
                guard !discoveryTransition else { return }
                // Stop before start: a double start can wedge some controllers.
                discoveryTransition = true
                try? await bluez.stopDiscovery(adapter: adapter)
                discoveryTransition = false
                discoveryRequested = false
                updateSdk { $0.discoveryRunning = false }
            }
        }
        // Idempotent: catches up with a change that arrived while a call was under way.
        await ensureDiscovery()
        // Retention at the first tick, then hourly.
        if lastPrune.map({ now - $0 >= .seconds(3600) }) ?? true {
            lastPrune = now
            do {
                try store.prune(maxEvents: configuration.journalMaxEvents,
                                maxAge: Double(configuration.journalMaxAge.components.seconds), now: Clocks.wall())
            } catch {
                logger.error("journal retention failed", metadata: ["error": "\(error)"])
            }
        }
    }

    // MARK: Events

    func updateSdk(_ change: (inout SdkStateInputs) -> Void) {
        if let state = sdk.update(change) {
            emit("sdk.state", Render.sdkState(state))
        }
    }

    /// Journals an event, then hands it to every subscriber that wants its kind.
    func emit(_ kind: String, _ data: JSONValue) {
        let time = Clocks.wall()
        let event: AccessStore.Event
        do {
            event = try store.append(kind: kind, data: data.jsonText, time: time)
        } catch {
            logger.error("cannot journal event", metadata: ["kind": "\(kind)", "error": "\(error)"])
            return
        }
        lastSequence = event.sequence
        let line = Self.notification(event, data: data)
        for (client, subscription) in subscribers where subscription.kinds?.contains(kind) ?? true {
            client.deliver(sequence: event.sequence, notification: line)
        }
    }

    static func notification(_ event: AccessStore.Event, data: JSONValue) -> String {
        RPCRequest.notification(method: "event", params: [
            "seq": .int(event.sequence), "time": .double(event.time), "kind": .string(event.kind), "data": data,
        ])
    }

    // MARK: Requests

    public func disconnected(_ client: ControlClient) async {
        subscribers[client] = nil
    }

    public func handle(_ request: RPCRequest, from client: ControlClient) async -> Result<JSONValue, RPCError> {
        switch request.method {
        case "status.get":
            return .success(status())
        case "readers.list":
            return .success(["readers": .array(registry.readers.map(Render.reader))])
        case "scanning.set":
            return await toggle(request, client: client, setting: "scanning", answer: "scanningEnabled") { service, enabled in
                service.scanningEnabled = enabled
                service.updateSdk { $0.scanningEnabled = enabled }
                await service.ensureDiscovery()
            }
        case "automaticAccess.set":
            return await toggle(request, client: client, setting: "automaticAccess", answer: "automaticAccessEnabled") { service, enabled in
                service.automaticAccessEnabled = enabled
                service.perform(service.controller.handle(.automaticAccessChanged(enabled), at: Clocks.monotonic()))
            }
        case "events.subscribe":
            return subscribe(client, params: request.params)
        case "events.unsubscribe":
            let was = subscribers.removeValue(forKey: client) != nil
            return .success(["subscribed": .bool(false), "wasSubscribed": .bool(was)])
        case "access.request":
            return await manualRequest(request.params, operation: { _ in .success(.access) }, client: client)
        case "actions.list":
            return await manualRequest(request.params, operation: { _ in .success(.enumerateActions) }, client: client)
        case "actions.perform":
            return await manualRequest(request.params, operation: { params in
                guard let id = params["action"]?.int, let action = Int8(exactly: id) else {
                    return .failure(.invalidParams("action must be an action id from actions.list"))
                }
                return .success(.performAction(action))
            }, client: client)
        case "secondFactor.respond":
            return await respondToSecondFactor(request.params, client: client)
        case "credentials.list":
            guard client.role >= .admin else { return .failure(.forbidden(needs: .admin)) }
            return .success(["credentials": .array(credentials.map(renderCredential))])
        case "credentials.register":
            guard client.role >= .admin else { return .failure(.forbidden(needs: .admin)) }
            return await registerCredential(request.params, client: client)
        case "credentials.delete":
            guard client.role >= .admin else { return .failure(.forbidden(needs: .admin)) }
            return await deleteCredential(request.params, client: client)
        case "items.sync":
            guard client.role >= .admin else { return .failure(.forbidden(needs: .admin)) }
            return .success(await syncAll(reason: "requested"))
        case "items.list":
            guard client.role >= .admin else { return .failure(.forbidden(needs: .admin)) }
            return .success(["items": .array(items.map(Render.item))])
        case "log.setLevel":
            guard client.role >= .operator else { return .failure(.forbidden(needs: .operator)) }
            guard let name = request.params["level"]?.string, let level = Logger.Level(rawValue: name) else {
                return .failure(.invalidParams("level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))"))
            }
            logLevel.set(level)
            logger.notice("log level set by a client", metadata: ["level": "\(name)", "uid": "\(client.uid)"])
            return .success(["level": .string(name)])
        default:
            return .failure(.methodNotFound(request.method))
        }
    }

    /// An operator's on/off setting: checked, saved (it outlives restarts), then applied.
    private func toggle(
        _ request: RPCRequest, client: ControlClient, setting: String, answer: String,
        apply: (isolated AccessService, Bool) async -> Void
    ) async -> Result<JSONValue, RPCError> {
        guard client.role >= .operator else { return .failure(.forbidden(needs: .operator)) }
        guard let enabled = request.params["enabled"]?.bool else { return .failure(.invalidParams("enabled must be true or false")) }
        do {
            try store.setBoolSetting(setting, enabled)
        } catch {
            return .failure(.internalError("cannot save the setting: \(error)"))
        }
        logger.notice("\(setting) \(enabled ? "enabled" : "disabled") by a client", metadata: ["uid": "\(client.uid)"])
        await apply(self, enabled)
        return .success(.object([answer: .bool(enabled)]))
    }

    private func status() -> JSONValue {
        let state = sdk.current
        return [
            "version": .string(AccessDaemon.version),
            "protocolVersion": .int(Int64(AccessDaemon.protocolVersion)),
            "isScanning": .bool(state.isScanning),
            "states": .array(state.states.map { .string($0.rawValue) }),
            "featureErrors": .array(state.featureSyncErrors.map { .string($0) }),
            "scanningEnabled": .bool(scanningEnabled),
            "automaticAccessEnabled": .bool(automaticAccessEnabled),
            "adapter": adapterPath.map { .string(String($0.split(separator: "/").last ?? "")) } ?? .null,
            "bluetoothServicePresent": .bool(sdk.inputs.bluetoothServicePresent),
            "readerCount": .int(Int64(registry.count)),
            "credentialCount": .int(Int64(credentials.count)),
            "usableCredentialCount": .int(Int64(sdk.inputs.usableCredentialCount)),
            "refusedAdvertisements": .int(Int64(refusedAdvertisements)),
            "lastSequence": .int(lastSequence),
            "uptimeSeconds": .int(Int64((Clocks.monotonic() - startedAt).components.seconds)),
        ]
    }

    private func subscribe(_ client: ControlClient, params: JSONValue) -> Result<JSONValue, RPCError> {
        var kinds: Set<String>?
        if let requested = params["kinds"] {
            guard let list = requested.array?.compactMap(\.string), list.count == requested.array?.count else {
                return .failure(.invalidParams("kinds must be a list of event kinds"))
            }
            kinds = Set(list)
        }
        var replayed = 0
        var first: Int64?
        if let sinceValue = params["since"] {
            guard let since = sinceValue.int, since >= 0 else { return .failure(.invalidParams("since must be a sequence number ≥ 0")) }
            do {
                first = try store.firstSequence()
                // Replay and registration happen without a suspension in between, so no
                // event falls between the two.
                var cursor = since
                while true {
                    let batch = try store.events(after: cursor, kinds: kinds, limit: 1000)
                    for event in batch {
                        let data = (try? JSONValue.parse(event.data)) ?? .null
                        client.deliver(sequence: event.sequence, notification: Self.notification(event, data: data))
                    }
                    replayed += batch.count
                    guard let last = batch.last, batch.count == 1000 else { break }
                    cursor = last.sequence
                }
            } catch {
                return .failure(.internalError("cannot read the journal: \(error)"))
            }
        }
        subscribers[client] = Subscription(kinds: kinds)
        var answer: [String: JSONValue] = [
            "subscribed": true, "replayed": .int(Int64(replayed)), "lastSequence": .int(lastSequence),
        ]
        // Events older than the journal keeps cannot be replayed: say from where it starts.
        if let first { answer["oldestAvailable"] = .int(first) }
        return .success(.object(answer))
    }
}
