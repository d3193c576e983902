/// A condition that stops accessd from doing its job, named as the SDK's `MobileAccessState`
/// where one maps, and with Linux names where none does. Raw values are the wire names.
public enum MobileAccessState: String, Sendable, CaseIterable, Comparable {
    /// bluetoothd is not on the bus.
    case bluetoothServiceUnavailable
    /// No Bluetooth adapter (the SDK's `errorNoBleFeature`).
    case errorNoBleFeature
    /// The adapter cannot do the job (no LE central role: `AdapterFitness`); the SDK's name.
    case errorDeviceNotSupported
    /// The adapter is powered off or blocked by rfkill.
    case bleErrorDisabled
    /// BlueZ refuses us (D-Bus access denied).
    case bleErrorUnauthorized
    /// The adapter hears nothing although discovery runs, and restarting discovery and
    /// power-cycling it did not help: a stuck controller (`RadioRecovery`; a Linux name).
    case errorBleStuck
    case errorNoCredentials
    /// A credential needs a second factor and no PIN has been set for it.
    case errorNoSecondFactorSet
    /// Too many wrong PINs: the second factor is locked.
    case secondFactorLockedOut
    /// A credential's site has not been synced with for longer than `[site] max_offline`: that
    /// credential is not presented until a sync succeeds (a Linux name: the SDK has none).
    case errorCredentialsOffline
    /// A credential's key does not open on this kiosk (sealed on another machine, a data key
    /// replaced, a corrupt row) or fails its self-test: it is never presented (a Linux name).
    case errorCredentialKeyUnavailable

    /// Declaration order: causes first (no bluetoothd hides everything about adapters).
    private var rank: Int {
        switch self {
        case .bluetoothServiceUnavailable: 0
        case .errorNoBleFeature: 1
        case .errorDeviceNotSupported: 2
        case .bleErrorDisabled: 3
        case .bleErrorUnauthorized: 4
        case .errorBleStuck: 5
        case .errorNoCredentials: 6
        case .errorNoSecondFactorSet: 7
        case .secondFactorLockedOut: 8
        case .errorCredentialsOffline: 9
        case .errorCredentialKeyUnavailable: 10
        }
    }

    public static func < (lhs: MobileAccessState, rhs: MobileAccessState) -> Bool {
        lhs.rank < rhs.rank
    }
}

/// Everything the SDK state is derived from. The shell fills it from BlueZ, the store and
/// the settings; the core derives the rest.
public struct SdkStateInputs: Hashable, Sendable {
    public var bluetoothServicePresent = false
    public var adapterPresent = false
    /// The adapter cannot do the job (`AdapterFitness`): it is not used.
    public var adapterUnfit = false
    public var adapterPowered = false
    /// rfkill soft or hard block.
    public var adapterBlocked = false
    /// The recovery ladder found the adapter stuck (`RadioRecovery`).
    public var adapterStuck = false
    /// False when BlueZ answered AccessDenied / NotPermitted.
    public var permissionGranted = true
    public var usableCredentialCount = 0
    /// Credentials that require a second factor but have no PIN set.
    public var credentialsMissingSecondFactor = 0
    public var secondFactorLockedOut = false
    /// Active credentials withheld because their site was not reached for `[site] max_offline`.
    public var offlineCredentialCount = 0
    /// Credentials whose key does not open or fails its self-test.
    public var keyUnavailableCredentialCount = 0
    /// The operator asked for scanning (`scanning.set`).
    public var scanningEnabled = false
    /// BlueZ confirmed discovery is running (`Discovering` is true).
    public var discoveryRunning = false
    /// Features whose last sync failed, by wire name (e.g. "aperio", "cloud").
    public var featureSyncErrors: Set<String> = []

    public init() {}
}

/// The SDK's `onStateChange(isScanning:, states:)`, plus the features in error.
public struct SdkState: Hashable, Sendable {
    public var isScanning: Bool
    public var states: [MobileAccessState]
    public var featureSyncErrors: [String]

    /// Derives the state. Bluetooth states hide each other in order of cause: with no
    /// bluetoothd there is no adapter to speak of, and so on.
    public init(_ inputs: SdkStateInputs) {
        var states: [MobileAccessState] = []
        if !inputs.bluetoothServicePresent {
            states.append(.bluetoothServiceUnavailable)
        } else if !inputs.permissionGranted {
            states.append(.bleErrorUnauthorized)
        } else if !inputs.adapterPresent {
            states.append(.errorNoBleFeature)
        } else if inputs.adapterUnfit {
            states.append(.errorDeviceNotSupported)
        } else if !inputs.adapterPowered || inputs.adapterBlocked {
            states.append(.bleErrorDisabled)
        } else if inputs.adapterStuck {
            states.append(.errorBleStuck)
        }
        if inputs.usableCredentialCount == 0 { states.append(.errorNoCredentials) }
        if inputs.credentialsMissingSecondFactor > 0 { states.append(.errorNoSecondFactorSet) }
        if inputs.secondFactorLockedOut { states.append(.secondFactorLockedOut) }
        if inputs.offlineCredentialCount > 0 { states.append(.errorCredentialsOffline) }
        if inputs.keyUnavailableCredentialCount > 0 { states.append(.errorCredentialKeyUnavailable) }
        self.states = states
        let radioReady = !states.contains { $0 < .errorNoCredentials }
        self.isScanning = inputs.scanningEnabled && radioReady && inputs.discoveryRunning
        self.featureSyncErrors = inputs.featureSyncErrors.sorted()
    }

    /// Whether the preconditions for starting discovery hold (the SDK's `setScanning`
    /// starts only once they do): bluetoothd present, permitted, an adapter powered.
    public static func canScan(_ inputs: SdkStateInputs) -> Bool {
        inputs.bluetoothServicePresent && inputs.permissionGranted && inputs.adapterPresent
            && !inputs.adapterUnfit && inputs.adapterPowered && !inputs.adapterBlocked
    }
}

/// Emits the SDK state only when it changes, as `SdkStateDelegate` does.
public struct SdkStateTracker: Sendable {
    public private(set) var inputs: SdkStateInputs
    public private(set) var current: SdkState

    public init(_ inputs: SdkStateInputs = SdkStateInputs()) {
        self.inputs = inputs
        self.current = SdkState(inputs)
    }

    /// Applies a change to the inputs; returns the new state when it differs.
    public mutating func update(_ change: (inout SdkStateInputs) -> Void) -> SdkState? {
        change(&inputs)
        let next = SdkState(inputs)
        guard next != current else { return nil }
        current = next
        return next
    }
}
