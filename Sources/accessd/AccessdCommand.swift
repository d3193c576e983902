import AccessCore
import AccessDaemon
import AccessStore
import ArgumentParser
import BlueZ
import CFatalSignals
import ControlSocket
import FoundationEssentials
import Logging
import ServiceLifecycle
import UnixSignals

#if canImport(Glibc)
    import Glibc
#endif

/// The command line and the service; started by `AccessdMain` (Main.swift says why not as `@main`).
struct AccessdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accessd",
        abstract: "Mobile-access credential holder for Bluetooth LE door readers.",
        discussion: """
            Scans through BlueZ for readers, tracks their range and reports SDK state and \
            reader events on a Unix socket (JSON-RPC 2.0, docs/protocol.md) for accessctl. \
            SIGHUP reloads the configuration. Exit status 78 (EX_CONFIG) when the \
            configuration is refused (a missing socket directory or group included), 75 \
            (EX_TEMPFAIL) when another accessd holds the state directory or answers on the \
            socket, 73 when the state directory cannot be written, 69 without D-Bus, 70 when a \
            service fails while running.
            """,
        version: AccessDaemon.version
    )

    /// How long a stop (SIGTERM) may take before the services are cancelled, and the
    /// cancellation after that (docs/operations.md, "Stopping"): 12 s in all, inside the
    /// unit's TimeoutStopSec=15s.
    static let gracefulStopLimit: Duration = .seconds(8)
    static let cancellationLimit: Duration = .seconds(4)

    @Option(help: "Configuration file (built-in defaults when the default file is absent).")
    var config: String = "/etc/accessd/accessd.toml"
    @Option(help: "Control socket path (overrides [socket] path).") var socket: String?
    @Option(name: .customLong("state-dir"), help: "State directory (overrides [store] state_directory).")
    var stateDirectory: String?
    @Option(help: "D-Bus to reach BlueZ on: system, or a bus address (tests).") var bus: String = "system"
    @Flag(name: .customLong("check-config"), help: "Validate the configuration and exit.") var checkConfig = false

    func run() async throws {
        // After its backtrace, a fatal signal from outside (the watchdog's SIGABRT) ends accessd.
        _ = accessd_end_process_after_crash_handlers()
        var settings: AccessdConfiguration
        let mayBeAbsent = config == "/etc/accessd/accessd.toml"
        do {
            settings = try ConfigurationLoader.load(path: config, mayBeAbsent: mayBeAbsent)
        } catch {
            printError("accessd: \(error)")
            throw ExitCode(78)
        }
        let overrides: @Sendable (inout AccessdConfiguration) -> Void = { [socket, stateDirectory] settings in
            if let socket { settings.socketPath = socket }
            if let stateDirectory { settings.stateDirectory = stateDirectory }
        }
        overrides(&settings)
        for warning in ConfigurationWarnings.of(path: config) { printError("accessd: warning: \(warning)") }
        let problems = ConfigurationChecks.problems(settings, atStart: !checkConfig)
        for problem in problems { printError("accessd: \(config): \(problem)") }
        if !problems.isEmpty { throw ExitCode(78) }
        if checkConfig {
            let absent = mayBeAbsent && access(config, F_OK) != 0
            print("\(config): \(absent ? "absent: the built-in defaults, " : "")OK")
            return
        }

        let level = LogLevelSetting(Logger.Level(rawValue: settings.logLevel.rawValue) ?? .info)
        LoggingSystem.bootstrap { label in JournalLogHandler(label: label, setting: level) }
        let logger = Logger(label: "accessd")
        let notifier = SystemdNotifier()
        do {
            try DescriptorLimit.ensure(clients: settings.maximumClients)
        } catch {
            printError("accessd: \(error)")
            throw ExitCode(78)
        }

        do {
            try StateDirectoryLock.lock(settings.stateDirectory)
            try SocketPath.claim(settings.socketPath)
        } catch {
            printError("accessd: \(error); not starting")
            throw ExitCode((error as? StateDirectoryLock.Refusal)?.exitStatus ?? StateDirectoryLock.exitStatus)
        }
        let store: AccessStore
        do {
            let dataKey = DataKeySource.load(
                credentialsDirectory: ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"],
                handoff: ProcessInfo.processInfo.environment["ACCESSD_DATA_KEY_HANDOFF"],
                keyFile: settings.effectiveDataKeyFile)
            store = try AccessStore(directory: settings.stateDirectory, dataKey: dataKey)
            SecretsReport.log(store.secretsAtRest, logger: logger)
        } catch {
            logger.critical(
                "cannot open the state directory",
                metadata: ["path": "\(settings.stateDirectory)", "error": "\(error)"])
            throw ExitCode(73)  // EX_CANTCREAT
        }
        let connection: DBusConnection
        do {
            connection = try DBusConnection(address: bus == "system" ? nil : bus)
        } catch {
            logger.critical("cannot connect to D-Bus", metadata: ["bus": "\(bus)", "error": "\(error)"])
            throw ExitCode(69)  // EX_UNAVAILABLE
        }
        var socketGroup: gid_t?
        if let name = settings.socketGroup, let gid = Groups.gid(named: name) {  // checked to exist above
            // Giving the socket to a group takes membership of it (no CAP_CHOWN here).
            guard getuid() == 0 || getegid() == gid || Groups.ownSupplementaryGroups().contains(gid) else {
                printError(
                    "accessd: \(config): [socket] group '\(name)': accessd's user is not a member, so it "
                        + "cannot give the socket to that group (usermod -aG \(name) accessd)")
                throw ExitCode(78)
            }
            socketGroup = gid
        }
        let site: SiteClient
        do {
            site = try SiteClient(
                caFile: settings.siteCAFile, timeout: settings.siteRequestTimeout, pins: settings.sitePins)
        } catch {
            printError("accessd: \(config): [site] ca_file: \(error)")
            throw ExitCode(78)
        }
        // Only readers' advertisements reach the daemon; a lobby's phones are counted as heard.
        let central = BlueZClient(connection: connection, advertisementsOf: [ReaderAdvertisement.serviceDataUUIDString])
        let daemon = try AccessDaemonServices(
            configuration: settings, store: store,
            central: central, site: site,
            logLevel: level, logger: logger,
            configFile: access(config, F_OK) == 0 ? config : nil)
        let server = ControlServer(
            path: settings.socketPath, group: socketGroup, eventLimit: settings.subscriberQueueLimit,
            limits: settings.clientLimits, logger: logger,
            handler: daemon.control,
            roleOf: Groups.roleResolver(operatorGroup: settings.operatorGroup, adminGroup: settings.adminGroup))
        var metrics: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let endpoint = settings.metricsListen {
            let exporter = MetricsExporter(endpoint: endpoint, daemon: daemon, logger: logger) {
                .init(
                    socketClients: server.connectedClients, socketDroppedEvents: server.droppedEvents,
                    bluezCallFailures: central.callFailures)
            }
            metrics.append(.init(service: untilGracefulShutdown { await exporter.run() }))
        }

        let socketPath = settings.socketPath
        let running = settings
        let configPath = config
        // Trapped before the socket is up: SIGHUP's default action would end the process.
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        var configuration = ServiceGroupConfiguration(
            // Shut down in reverse order: the access service first, while the socket is still
            // up, so the requests it answers on the way out (`shuttingDown`) reach their clients.
            services: [
                .init(
                    service: untilGracefulShutdown {
                        try await server.run {
                            notifier.notify("READY=1\nSTATUS=listening on \(socketPath)")
                        }
                    })
            ] + daemon.services.map { .init(service: $0) } + metrics + [
                .init(
                    service: untilGracefulShutdown {
                        try await SystemdReporter(notifier: notifier, daemon: daemon).run()
                    }, successTerminationBehavior: .ignore),
                .init(
                    service: untilGracefulShutdown {
                        var current = running
                        for await _ in hangups {
                            current = reload(
                                configPath, over: current, level: level, notifier: notifier, logger: logger,
                                overrides: overrides, apply: daemon.reconfigure)
                        }
                    }, successTerminationBehavior: .ignore),
            ],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        // Within the unit's TimeoutStopSec (15 s): a graceful stop that has not ended in 8 s
        // is cancelled, and a cancellation that has not ended 4 s later aborts with every
        // thread's backtrace (the runtime's, in the journal) instead of systemd's silent SIGKILL.
        configuration.maximumGracefulShutdownDuration = Self.gracefulStopLimit
        configuration.maximumCancellationDuration = Self.cancellationLimit
        let group = ServiceGroup(configuration: configuration)
        logger.notice(
            "accessd \(AccessDaemon.version) starting",
            metadata: [
                "config": "\(config)", "socket": "\(settings.socketPath)", "state": "\(settings.stateDirectory)",
            ])
        var failure: (any Error)?
        do {
            try await group.run()
        } catch {
            failure = error
        }
        // Whatever ended the services: the HTTP client traps if it is dropped running.
        notifier.notify("STOPPING=1")
        await site.shutdown()
        connection.close()
        if let failure {
            logger.critical("accessd stopped on an error", metadata: ["error": "\(failure)"])
            throw ExitCode(70)  // EX_SOFTWARE
        }
        logger.notice("accessd stopped")
    }
}

/// One SIGHUP: the file read again and applied as far as it can be (ConfigurationReload).
/// `overrides`: the command line's, which win over the file at every reload as at start.
/// `apply`: hands the result to the services, before the reload is logged as done.
func reload(
    _ path: String, over running: AccessdConfiguration, level: LogLevelSetting, notifier: SystemdNotifier,
    logger: Logger, overrides: (inout AccessdConfiguration) -> Void,
    apply: (AccessdConfiguration) -> Void
) -> AccessdConfiguration {
    notifier.notify("RELOADING=1")
    defer { notifier.notify("READY=1") }
    var reloaded: AccessdConfiguration
    do {
        reloaded = try ConfigurationLoader.load(path: path, mayBeAbsent: path == "/etc/accessd/accessd.toml")
        overrides(&reloaded)
    } catch {
        logger.error("reload refused; the running configuration stays", metadata: ["error": "\(error)"])
        return running
    }
    let (effective, outcome) = ConfigurationReload.apply(reloaded, over: running, logLevel: level)
    apply(effective)
    if outcome.applied.isEmpty && outcome.needRestart.isEmpty {
        logger.notice("configuration reloaded: nothing changed")
    } else {
        var metadata: Logger.Metadata = [:]
        if !outcome.applied.isEmpty { metadata["applied"] = "\(outcome.applied.joined(separator: ","))" }
        if !outcome.needRestart.isEmpty { metadata["needRestart"] = "\(outcome.needRestart.joined(separator: ","))" }
        logger.notice("configuration reloaded", metadata: metadata)
    }
    if !outcome.needRestart.isEmpty {
        logger.warning(
            "changed settings take effect at the next restart",
            metadata: ["settings": "\(outcome.needRestart.joined(separator: ","))"])
    }
    return effective
}

func printError(_ text: String) {
    let line = text + "\n"
    _ = line.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
}
