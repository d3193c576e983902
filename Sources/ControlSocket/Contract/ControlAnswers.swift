import AccessJSON

/// What the control socket's methods answer (docs/protocol.md). The events that carry the
/// same things (`reader.updated`, `access.completed`) use the same types.

public struct StatusAnswer: Codable, Sendable, Hashable {
    public var version: String
    /// The Debian package's version as dpkg records it, when accessd runs from the package
    /// (a site's rebuild may add a suffix the binary's `version` does not carry).
    public var package: String?
    public var protocolVersion: Int
    public var isScanning: Bool
    public var states: [String]
    public var featureErrors: [String]
    public var scanningEnabled: Bool
    public var automaticAccessEnabled: Bool
    /// `hci0`; absent when there is none.
    public var adapter: String?
    public var bluetoothServicePresent: Bool
    public var readerCount: Int
    public var credentialCount: Int
    public var usableCredentialCount: Int
    public var refusedAdvertisements: Int
    public var lastSequence: Int64
    public var uptimeSeconds: Int64
    /// The log level in force (`log.setLevel` changes it until a restart).
    public var logLevel: String?
    /// The configuration file read at start; absent: the built-in defaults.
    public var configFile: String?
    /// `[bluetooth] adapter` when one is named (absent: the first powered one).
    public var configuredAdapter: String?
    /// Who set the switch in force: `configuration` (the file's start value) or `operator`
    /// (`scanning.set` / `automaticAccess.set`, kept across restarts and winning over the file).
    public var scanningSetBy: String?
    public var automaticAccessSetBy: String?
    /// The upload of access events to the sites.
    public var audit: AuditStatus?
    /// The MQTT bridge; absent when `[mqtt]` is not configured.
    public var mqtt: MQTTStatus?
    /// How the credentials' keys are kept at rest.
    public var secrets: SecretsStatus?
    /// The adapter's recovery ladder.
    public var radio: RadioStatus?
    /// The invitation file's registration, when there was one at start.
    public var enrolment: EnrolmentStatus?

    public init(
        version: String, protocolVersion: Int, isScanning: Bool, states: [String], featureErrors: [String],
        scanningEnabled: Bool, automaticAccessEnabled: Bool, adapter: String?, bluetoothServicePresent: Bool,
        readerCount: Int, credentialCount: Int, usableCredentialCount: Int, refusedAdvertisements: Int,
        lastSequence: Int64, uptimeSeconds: Int64, logLevel: String? = nil, configFile: String? = nil,
        configuredAdapter: String? = nil, scanningSetBy: String? = nil, automaticAccessSetBy: String? = nil,
        audit: AuditStatus? = nil,
        mqtt: MQTTStatus? = nil, secrets: SecretsStatus? = nil, radio: RadioStatus? = nil,
        enrolment: EnrolmentStatus? = nil, package: String? = nil
    ) {
        self.package = package
        self.enrolment = enrolment
        self.secrets = secrets
        self.radio = radio
        self.audit = audit
        self.mqtt = mqtt
        self.logLevel = logLevel
        self.configFile = configFile
        self.configuredAdapter = configuredAdapter
        self.scanningSetBy = scanningSetBy
        self.automaticAccessSetBy = automaticAccessSetBy
        self.version = version
        self.protocolVersion = protocolVersion
        self.isScanning = isScanning
        self.states = states
        self.featureErrors = featureErrors
        self.scanningEnabled = scanningEnabled
        self.automaticAccessEnabled = automaticAccessEnabled
        self.adapter = adapter
        self.bluetoothServicePresent = bluetoothServicePresent
        self.readerCount = readerCount
        self.credentialCount = credentialCount
        self.usableCredentialCount = usableCredentialCount
        self.refusedAdvertisements = refusedAdvertisements
        self.lastSequence = lastSequence
        self.uptimeSeconds = uptimeSeconds
    }
}

/// A reader as `readers.list` and `reader.updated` show it (the SDK's `ReaderAttributes`).
public struct ReaderInfo: Codable, Sendable, Hashable {
    public var id: String
    public var name: String?
    public var kind: String
    public var site: String
    public var address: String
    public var rssi: Int
    public var txPower: Int
    public var measuredPathLoss: Double
    public var distance: String
    public var autoConnectPathLoss: Int
    public var manualConnectPathLoss: Int
    public var isBleAutoConnectEnabled: Bool
    public var isBleManualConnectEnabled: Bool
    public var isSecondFactorRequired: Bool
    public var isBleActionsEnabled: Bool
    public var isInAutoConnectRange: Bool
    /// Seconds since the reader was last heard (an advertisement, or its link), to a tenth.
    public var heardSecondsAgo: Double?
    /// What this kiosk's reader scope leaves of the reader's offer.
    public var scope: ReaderScopeInfo?

    public init(
        id: String, name: String?, kind: String, site: String, address: String, rssi: Int, txPower: Int,
        measuredPathLoss: Double, distance: String, autoConnectPathLoss: Int, manualConnectPathLoss: Int,
        isBleAutoConnectEnabled: Bool, isBleManualConnectEnabled: Bool, isSecondFactorRequired: Bool,
        isBleActionsEnabled: Bool, isInAutoConnectRange: Bool, heardSecondsAgo: Double? = nil,
        scope: ReaderScopeInfo? = nil
    ) {
        self.heardSecondsAgo = heardSecondsAgo
        self.scope = scope
        self.id = id
        self.name = name
        self.kind = kind
        self.site = site
        self.address = address
        self.rssi = rssi
        self.txPower = txPower
        self.measuredPathLoss = measuredPathLoss
        self.distance = distance
        self.autoConnectPathLoss = autoConnectPathLoss
        self.manualConnectPathLoss = manualConnectPathLoss
        self.isBleAutoConnectEnabled = isBleAutoConnectEnabled
        self.isBleManualConnectEnabled = isBleManualConnectEnabled
        self.isSecondFactorRequired = isSecondFactorRequired
        self.isBleActionsEnabled = isBleActionsEnabled
        self.isInAutoConnectRange = isInAutoConnectRange
    }
}

public struct ReadersAnswer: Codable, Sendable, Hashable {
    public var readers: [ReaderInfo]
    public init(readers: [ReaderInfo]) { self.readers = readers }
}

public struct SubscribeAnswer: Codable, Sendable, Hashable {
    public var subscribed: Bool
    public var replayed: Int
    public var lastSequence: Int64
    /// When a replay was asked for: the oldest event the journal still keeps.
    public var oldestAvailable: Int64?
    /// When a replay was asked for: the sequence it starts after (`since`, or where
    /// `sinceTime` falls), to resume from if the connection is lost before any event came.
    public var since: Int64?
    public init(subscribed: Bool, replayed: Int, lastSequence: Int64, oldestAvailable: Int64?, since: Int64? = nil) {
        self.since = since
        self.subscribed = subscribed
        self.replayed = replayed
        self.lastSequence = lastSequence
        self.oldestAvailable = oldestAvailable
    }
}

public struct UnsubscribeAnswer: Codable, Sendable, Hashable {
    public var subscribed: Bool
    public var wasSubscribed: Bool
    public init(wasSubscribed: Bool) {
        self.subscribed = false
        self.wasSubscribed = wasSubscribed
    }
}

public struct ScanningAnswer: Codable, Sendable, Hashable {
    public var scanningEnabled: Bool
    public init(scanningEnabled: Bool) { self.scanningEnabled = scanningEnabled }
}

public struct AutomaticAccessAnswer: Codable, Sendable, Hashable {
    public var automaticAccessEnabled: Bool
    public init(automaticAccessEnabled: Bool) { self.automaticAccessEnabled = automaticAccessEnabled }
}

/// How an exchange went on the air: milliseconds per phase (absent: the phase did not
/// happen), and the link's ATT MTU.
public struct ExchangeTimings: Codable, Sendable, Hashable {
    public var detectionMs: Double?
    public var connectMs: Double?
    public var resolveMs: Double?
    public var exchangeMs: Double?
    public var totalMs: Double?
    /// The ATT MTU of the link (BlueZ's `GattCharacteristic1.MTU`), once subscribed: a
    /// message of more than MTU − 3 bytes goes in several fragments (reader protocol §5).
    public var mtu: Int?
    public init(
        detectionMs: Double?, connectMs: Double?, resolveMs: Double?, exchangeMs: Double?, totalMs: Double?,
        mtu: Int? = nil
    ) {
        self.detectionMs = detectionMs
        self.connectMs = connectMs
        self.resolveMs = resolveMs
        self.exchangeMs = exchangeMs
        self.totalMs = totalMs
        self.mtu = mtu
    }
}

public struct ActionInfo: Codable, Sendable, Hashable {
    public var id: Int
    public var name: String
    public var type: String
    public init(id: Int, name: String, type: String) {
        self.id = id
        self.name = name
        self.type = type
    }
}

/// How an exchange ended: the answer to `access.request`, `actions.list`, `actions.perform`,
/// and the data of `access.completed`. `outcome` says which fields are there: `decided`
/// (`decision`, `granted`, `mode`), `actionsListed` (`actions`), `actionPerformed` (also
/// `action`), `failed` (`error`, in events only: a request that fails gets an error answer).
public struct ExchangeAnswer: Codable, Sendable, Hashable {
    public var outcome: String
    public var reader: String
    /// The name the reader advertises (its local name), when it has one.
    public var readerName: String?
    /// The credential presented (the SDK's `AccessResult.credentialId`), once one was chosen.
    public var credential: String?
    public var origin: String
    /// `openNext` when an open-next window (`access.next`) started this automatic exchange.
    public var trigger: String?
    /// What the exchange did, as in `access.started`: `access`, `actions.list` or
    /// `actions.perform N`.
    public var operation: String?
    public var decision: String?
    public var granted: Bool?
    public var mode: String?
    public var actions: [ActionInfo]?
    public var action: Int?
    public var error: String?
    public var timings: ExchangeTimings?

    public init(
        outcome: String, reader: String, origin: String, decision: String? = nil, granted: Bool? = nil,
        mode: String? = nil, actions: [ActionInfo]? = nil, action: Int? = nil, error: String? = nil,
        timings: ExchangeTimings? = nil
    ) {
        self.outcome = outcome
        self.reader = reader
        self.origin = origin
        self.decision = decision
        self.granted = granted
        self.mode = mode
        self.actions = actions
        self.action = action
        self.error = error
        self.timings = timings
    }
}
