import AccessCore
import AccessJSON
import AccessStore
import BlueZ
import ControlSocket
import Logging
import ServiceLifecycle

/// The daemon's services over the core, wired together (docs/architecture.md):
///
///     BluetoothCentral ─events─▶ DiscoveryService ─door─▶ AccessEngine ─commands─▶ ExchangeEngine
///                                       │                      ▲                          │
///                                       └──── links dropped ───┼──────────────────────────┤
///                                                              └──── exchange ends ───────┘
///     ControlAPI ──▶ (each service's calls)     SiteSync ◀─requests─ schedule, items.sync
///                                               SiteWatch, AuditUpload: a task per credential
///     EventJournal ◀── every service's events ──▶ subscribers
///
/// Doors are ordered streams: a service hands an input on without waiting, and each input is
/// handled whole by its receiver. `services` are the ServiceGroup's, in start order; it stops
/// them in reverse.
public final class AccessDaemonServices: Sendable {
    let journal: EventJournal
    let sdk: SdkStatePublisher
    let book: CredentialBook
    let discovery: DiscoveryService
    let access: AccessEngine
    let exchanges: ExchangeEngine
    let sync: SiteSync
    let admin: CredentialAdmin
    let audit: AuditProgress
    /// The MQTT bridge's progress; nil when `[mqtt]` is not configured.
    let mqtt: MQTTProgress?
    let settings: RuntimeSettings
    /// The invitation file's registration (zero-touch enrolment).
    let enrolment: InvitationEnrolment
    /// `diagnostics.collect`'s bundles, one at a time.
    let diagnostics: DiagnosticsCollector
    /// `[features] aperio`: Aperio locks are presented their items.
    let aperioEnabled: Bool
    /// What `status.get` says of the configuration: its file and named adapter.
    let configFile: String?
    let configuredAdapter: String?
    let logger: Logger
    let startedAt = Clocks.monotonic()
    /// The engines' doors, for their counts (metrics).
    let doors: (access: AccessEngine.Door, exchanges: ExchangeEngine.Door)
    private let runners: [ClosureService]
    /// Hands a reloaded configuration to the engines, in order with their other inputs.
    private let reconfigureEngines: @Sendable (AccessdConfiguration) -> Void

    public init(
        configuration: AccessdConfiguration, store: AccessStore, central: any BluetoothCentral, site: SiteClient,
        logLevel: LogLevelSetting, logger: Logger, clock: any Clock<Duration> = ContinuousClock(),
        configFile: String? = nil
    ) throws {
        // Settings changed at run time win over the configuration's start values.
        let settings = RuntimeSettings(store: store, logLevel: logLevel)
        self.configFile = configFile
        self.configuredAdapter = configuration.adapter
        let scanning = try settings.saved(.scanning) ?? configuration.scanningOnStart
        let automatic = try settings.saved(.automaticAccess) ?? configuration.automaticAccessOnStart
        var operatorRules: [ReaderID: ReaderScope.Rule] = [:]
        do {
            operatorRules = try settings.savedReaderRules()
        } catch {
            logger.warning(
                "the operator's reader scope cannot be read; the file's applies", metadata: ["error": "\(error)"])
        }
        let journal = try EventJournal(store: store, logger: logger)
        let book = try CredentialBook(
            store: store, pinAttempts: configuration.pinAttempts,
            maxOffline: configuration.maxOffline.map { Double($0.components.seconds) }, logger: logger)
        var inputs = SdkStateInputs()
        inputs.scanningEnabled = scanning
        book.applyCounts(to: &inputs)
        let sdk = SdkStatePublisher(inputs, journal: journal)
        let accessDoor = AccessEngine.Door(capacity: AccessEngine.doorCapacity)
        let commandDoor = ExchangeEngine.Door(capacity: ExchangeEngine.doorCapacity)
        self.doors = (accessDoor, commandDoor)
        let access = AccessEngine(
            configuration: configuration, automaticAccessEnabled: automatic,
            scope: ReaderScope(configuration: configuration.readerRules, operatorRules: operatorRules),
            door: accessDoor,
            exchanges: commandDoor, journal: journal, clock: clock, logger: logger)
        let keys = KeyDerivation()
        let exchanges = ExchangeEngine(
            central: central, book: book, journal: journal, settings: ExchangeSettings(configuration),
            reports: accessDoor, keys: keys, clock: clock, logger: logger)
        let discovery = DiscoveryService(
            central: central, configuration: configuration, scanningEnabled: scanning, sdk: sdk,
            journal: journal, access: accessDoor, exchanges: commandDoor, exchangeActivity: exchanges.activity,
            clock: clock,
            logger: logger)
        let sync = SiteSync(
            site: site, book: book, journal: journal, sdk: sdk, interval: configuration.siteSyncInterval,
            clock: clock, logger: logger)
        let aperio = configuration.features.contains("aperio")
        book.onChange { [book, sdk] in
            sdk.update { book.applyCounts(to: &$0) }
            accessDoor.yield(.credentialsChanged(book.availability(aperioEnabled: aperio)))
        }
        accessDoor.yield(.credentialsChanged(book.availability(aperioEnabled: aperio)))

        self.journal = journal
        self.sdk = sdk
        self.book = book
        self.discovery = discovery
        self.access = access
        self.exchanges = exchanges
        self.sync = sync
        let audit = AuditProgress(enabled: configuration.auditUpload)
        self.audit = audit
        var bridge: MQTTBridge?
        if let mqtt = configuration.mqtt {
            let device = mqtt.clientID ?? MQTTConfiguration.defaultDevice()
            let progress = MQTTProgress(
                broker: "\(mqtt.tls ? "mqtts" : "mqtt")://\(mqtt.host):\(mqtt.port)",
                topic: "\(mqtt.topicPrefix)/\(device)")
            // The `state` topic: the SDK state with the adapter in use and the usable credentials.
            let currentState: @Sendable () async -> JSONValue = { [sdk, discovery] in
                guard case .object(var members) = Render.sdkState(sdk.current).json else { return .null }
                members["adapter"] = await discovery.scanningAndAdapter.1.map { .string($0) } ?? .null
                members["usableCredentials"] = .int(Int64(sdk.inputs.usableCredentialCount))
                return .object(members)
            }
            bridge = MQTTBridge(
                configuration: mqtt, device: device, journal: journal, currentState: currentState,
                progress: progress,
                commands: mqtt.commands.isEmpty
                    ? nil
                    : MQTTCommands(
                        topic: "\(mqtt.topicPrefix)/\(device)/commands", allowed: mqtt.commands,
                        diagnosticsTopic: "\(mqtt.topicPrefix)/\(device)/diagnostics", logger: logger),
                logger: logger)
        }
        self.mqtt = bridge?.progress
        self.admin = CredentialAdmin(
            site: site, book: book, journal: journal, sync: sync, keys: keys,
            deviceName: configuration.deviceName, logger: logger)
        let enrolment = InvitationEnrolment(
            path: configuration.effectiveInvitationFile, admin: admin, clock: clock, logger: logger)
        self.enrolment = enrolment
        self.settings = settings
        self.diagnostics = DiagnosticsCollector(socketPath: configuration.socketPath)
        self.aperioEnabled = aperio
        self.logger = logger
        self.reconfigureEngines = { configuration in
            accessDoor.yield(.reconfigure(configuration))
            commandDoor.yield(.reconfigure(ExchangeSettings(configuration)))
        }
        let retention = (configuration.journalMaxEvents, configuration.journalMaxAge)
        var runners = [
            untilGracefulShutdown {
                try await journal.runRetention(maxEvents: retention.0, maxAge: retention.1, clock: clock)
            },
            untilGracefulShutdown { try await sync.run() },
            untilGracefulShutdown {
                await SiteWatch(site: site, book: book, sync: sync, clock: clock, logger: logger).run()
            },
            untilGracefulShutdown { await exchanges.run(commands: commandDoor) },
            untilGracefulShutdown { await access.run(inputs: accessDoor) },
            untilGracefulShutdown { try await discovery.run() },
            untilGracefulShutdown {
                // Done with the file, it waits: a service group stops when one of its services ends.
                await enrolment.run()
                try await gracefulShutdown()
            },
        ]
        if configuration.auditUpload {
            let upload = AuditUpload(
                site: site, book: book, journal: journal, progress: audit, clock: clock, logger: logger)
            runners.append(untilGracefulShutdown { await upload.run() })
        }
        if let bridge {
            // First in, so stopped last: events journalled while the others stop still go out,
            // and `offline` is the last thing the broker hears.
            runners.insert(untilGracefulShutdown { await bridge.run() }, at: 0)
        }
        if let device = configuration.buttonDevice {
            let button = OpenNextButton(device: device, key: configuration.buttonKey, logger: logger) {
                accessDoor.yield(.buttonPressed)
            }
            runners.append(untilGracefulShutdown { await button.run() })
        }
        self.runners = runners
        // Commands from the broker run as an operator's on the socket (docs/fleet.md, "Commands").
        if let commands = bridge?.commands {
            let api = control
            let caller = ControlClient.outsideTheSocket(id: 1, role: commands.callerRole)
            commands.setHandler { await api.handle($0, from: caller) }
        }
    }

    /// A reload (SIGHUP): the settings `ConfigurationReload` applies live, taken by the engines
    /// for what they decide and start from now on.
    public func reconfigure(_ configuration: AccessdConfiguration) {
        reconfigureEngines(configuration)
    }

    /// The control socket's methods, one table.
    public var control: ControlAPI { ControlAPI(handlers: makeHandlers(), journal: journal) }

    /// The services in start order: ServiceGroup stops them in reverse, so discovery stops
    /// first, then pending requests are answered (`shuttingDown`) and links dropped.
    public var services: [any Service] { runners }
}

/// A service whose body runs until graceful shutdown cancels it, which is a clean stop, not
/// a failure (swift-service-lifecycle's `cancelWhenGracefulShutdown` rethrows the body's
/// `CancellationError`).
public func untilGracefulShutdown(_ body: @escaping @Sendable () async throws -> Void) -> ClosureService {
    ClosureService {
        do {
            try await cancelWhenGracefulShutdown(body)
        } catch is CancellationError {
            // Stopped by graceful shutdown.
        }
    }
}
