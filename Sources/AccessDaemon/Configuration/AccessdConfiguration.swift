import AccessCore
import ControlSocket

/// Everything accessd reads from `/etc/accessd/accessd.toml` (config/accessd.toml documents
/// each setting). Every field has a default, so an absent file means the defaults.
public struct AccessdConfiguration: Hashable, Sendable {
    public enum LogLevel: String, Sendable, CaseIterable {
        case trace, debug, info, notice, warning, error, critical
    }

    // [bluetooth]
    /// Adapter name ("hci0"); nil: the first powered adapter BlueZ offers.
    public var adapter: String? = nil
    /// Adapter names in preference order (`[bluetooth] adapters`); nil: `auto`, every adapter
    /// BlueZ offers, by index (`AdapterSelection`).
    public var adapters: [String]? = nil
    /// The adapters accessd may use, in preference order: `adapter` alone, or `adapters`.
    public var adapterOrder: [String]? { adapter.map { [$0] } ?? adapters }
    public var scanningOnStart = true
    /// Restart discovery when no advertisement arrived for this long (scanners go deaf).
    public var discoveryWatchdog: Duration = .seconds(60)
    /// The radio's recovery ladder (`RadioRecovery`); off, nothing is tried.
    public var radioRecovery = true

    // [access]
    public var automaticAccessOnStart = false
    public var connectionLimit = 1
    public var manualTimeout: Duration = .seconds(15)
    public var cooldown: Duration = .seconds(10)
    public var selectionWindow: Duration = .milliseconds(200)
    public var connectEarly = true
    /// How long a link held by `connectEarly` waits for its exchange before it is dropped.
    public var holdTime: Duration = .seconds(20)
    public var maximumRetries = 4
    public var stepTimeout: Duration = .seconds(5)
    public var secondFactorTimeout: Duration = .seconds(30)
    /// How long an open-next window (`access.next`, the button) stays open by default.
    public var openNextExpiry: Duration = .seconds(5)

    // [button]
    /// An input device (evdev) whose key opens the next door; nil: none.
    public var buttonDevice: String? = nil
    public var buttonKey = InputKeyCode("KEY_ENTER")!

    // [range]
    /// Taken at start only: each reader's filter state is built for one filter.
    public var rangeFilter: RangeFilter = .trendGated
    /// Taken at start only, like the filter. nil: the filter's own window.
    public var medianWindow: Int?
    public var sensitivity: ConnectionSensitivity = .normal
    public var smoothingFactor = 0.2
    public var approachSmoothingFactor = 0.5
    public var autoRangeExitMargin = 8.0
    public var expiryDelay: Duration = .seconds(5)
    public var staleTimeout: Duration = .seconds(10)

    // [features]
    public var features: Set<String> = []
    /// `[readers]` and `[reader.ID]`: the file's layer of the reader scope.
    public var readerRules: [ReaderID: ReaderScope.Rule] = [:]

    // [health]
    /// The interval each reader's health is judged over (`ReaderHealthPolicy.interval`).
    public var healthInterval: Duration = .seconds(60)

    // [prompts]
    public var secondFactorPrompt = "Enter your PIN to open the door"

    // [socket]
    public var socketPath = "/run/accessd/accessd.sock"
    /// Group owning the socket (mode 0660); nil: the daemon's own group.
    public var socketGroup: String? = nil
    /// Members may trigger access, actions and settings.
    public var operatorGroup = "accessd-operator"
    /// Members (and root) may manage credentials.
    public var adminGroup = "accessd-admin"
    /// Events a slow subscriber may have queued before it is told it missed some.
    public var subscriberQueueLimit = 1024
    /// Connections at once (an eighth kept for operators and admins).
    public var maximumClients = 128
    /// A client with nothing under way and no subscription is closed after this.
    public var clientIdleTimeout: Duration = .seconds(300)
    /// A client that has not read what accessd writes for this long is closed.
    public var clientSendTimeout: Duration = .seconds(30)

    // [store]
    public var stateDirectory = "/var/lib/accessd"
    /// Without systemd's `accessd-data-key` credential: the key file that seals the secrets,
    /// outside the state directory (nil: the state directory's path and `.key`).
    public var dataKeyFile: String?
    public var effectiveDataKeyFile: String { dataKeyFile ?? stateDirectory + ".key" }
    /// `[site] invitation_file`: an invitation a provisioning tool leaves for accessd to
    /// register at start (`InvitationEnrolment`); nil: `invitation` in the state directory.
    public var invitationFile: String? = nil
    public var effectiveInvitationFile: String { invitationFile ?? stateDirectory + "/invitation" }
    public var journalMaxEvents = 100_000
    public var journalMaxAge: Duration = .seconds(30 * 24 * 3600)

    // [site]
    /// PEM file of the CAs that sign site certificates, instead of the system's.
    public var siteCAFile: String? = nil
    /// `[site] pins`: the keys a site may present, or nil for any the CAs vouch for.
    public var sitePins: SitePins? = nil
    /// Whole time given to one call to a site.
    public var siteRequestTimeout: Duration = .seconds(15)
    /// Time between background syncs (credential state and items).
    public var siteSyncInterval: Duration = .seconds(900)
    /// The name sites show for this device; nil: the host name.
    public var deviceName: String? = nil
    /// Wrong PINs in a row before the second factor locks.
    public var pinAttempts = 5
    /// `[site] max_offline`: seconds without a successful sync after which a credential is not
    /// presented; nil (0 in the file): no limit.
    public var maxOffline: Duration? = nil
    /// `[site] audit_upload`: access events are uploaded to the site of the credential
    /// presented (docs/site-api.md §4.5).
    public var auditUpload = true

    // [log]
    public var logLevel: LogLevel = .info

    /// `[mqtt]`: the fleet bridge (docs/fleet.md); nil: off.
    public var mqtt: MQTTConfiguration? = nil

    /// `[metrics] listen`: where `/metrics` is served; nil: off.
    public var metricsListen: MetricsEndpoint? = nil

    public static let supportedFeatures: Set<String> = ["aperio", "salto", "digitalId"]

    public init() {}

    public var rangeConfiguration: RangeConfiguration {
        RangeConfiguration(
            filter: rangeFilter, sensitivityOffset: sensitivity.pathLossOffset, smoothingFactor: smoothingFactor,
            approachSmoothingFactor: approachSmoothingFactor, autoRangeExitMargin: autoRangeExitMargin,
            expiryDelay: expiryDelay, staleTimeout: staleTimeout, medianWindow: medianWindow)
    }

    public var clientLimits: ClientLimits {
        ClientLimits(
            maximumClients: maximumClients, reservedForOperators: max(1, maximumClients / 8),
            idleTimeout: clientIdleTimeout, sendTimeout: clientSendTimeout)
    }

    public var autoConnectConfiguration: AutoConnectMachine.Configuration {
        AutoConnectMachine.Configuration(
            cooldown: cooldown, selectionWindow: selectionWindow,
            retry: RetryPolicy(maximumRetries: maximumRetries), connectEarly: connectEarly,
            holdLimit: holdTime)
    }
}
