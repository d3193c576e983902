/// Everything a client may know about a reader: the SDK's `ReaderAttributes` plus what a
/// Linux operator needs (address, RSSI, site). The registry is its one source of truth.
public struct ReaderAttributes: Hashable, Sendable {
    public var id: ReaderID
    /// From the scan response; nil until one has been heard.
    public var name: String?
    public var kind: ReaderKind
    public var siteTag: SiteTag
    public var address: DeviceAddress
    /// Last raw RSSI (dBm).
    public var rssi: Int
    public var txPower: Int
    /// Smoothed path loss including the sensitivity offset (dB): the SDK's `measuredPathLoss`.
    public var measuredPathLoss: Double
    public var distance: ReaderDistance
    public var autoConnectPathLoss: Int
    public var manualConnectPathLoss: Int
    public var flags: ReaderFlags
    public var isInAutoConnectRange: Bool
    public var lastSeen: Timestamp
    /// What this kiosk's reader scope makes of the reader's offer (`ReaderScope`).
    public var scope: ReaderScope.Effective = .unrestricted

    public var isBleAutoConnectEnabled: Bool { flags.contains(.autoConnectEnabled) }
    public var isBleManualConnectEnabled: Bool { flags.contains(.manualConnectEnabled) }
    public var isSecondFactorRequired: Bool { flags.contains(.secondFactorRequired) }
    public var isBleActionsEnabled: Bool { flags.contains(.actionsEnabled) }
}

/// What the registry tells its clients (the SDK's `ReaderUpdateType`).
public enum ReaderUpdate: Hashable, Sendable {
    case attributesChanged(ReaderAttributes)
    case readerUnavailable(ReaderID)
}
