/// A reader's decision, with the SDK's codes (stable on the wire and in the reader protocol).
public enum AccessDecision: Int8, Sendable, CaseIterable, CustomStringConvertible {
    case withDualAuth = 5
    case withEscort = 4
    case grantedWithPassback = 3
    case grantedWithCompetencies = 2
    case granted = 1
    case deniedZone = -1
    case deniedZoneTime = -2
    case deniedAuth = -3
    case deniedLockdown = -4
    case deniedLift = -5
    case deniedCompetency = -6
    case deniedCompetencies = -7
    case deniedDualAuth = -8
    case deniedSecondDualAuth = -9
    case deniedNotEscort = -10
    case deniedTailgatingVisitors = -11
    case deniedPassback = -12
    case deniedTailgating = -13
    case deniedDualAuthRepeat = -14
    case deniedChallenge = -15
    case deniedMobileNotSupported = -16
    case deniedCannotDisarmAlarmZone = -17
    case deniedUnexpected = -64

    public var isGranted: Bool { rawValue >= 1 && rawValue <= 3 }
    public var isDenied: Bool { rawValue < 0 }

    /// The SDK's case name: stable, not localised.
    public var description: String {
        switch self {
        case .withDualAuth: "withDualAuth"
        case .withEscort: "withEscort"
        case .grantedWithPassback: "grantedWithPassback"
        case .grantedWithCompetencies: "grantedWithCompetencies"
        case .granted: "granted"
        case .deniedZone: "deniedZone"
        case .deniedZoneTime: "deniedZoneTime"
        case .deniedAuth: "deniedAuth"
        case .deniedLockdown: "deniedLockdown"
        case .deniedLift: "deniedLift"
        case .deniedCompetency: "deniedCompetency"
        case .deniedCompetencies: "deniedCompetencies"
        case .deniedDualAuth: "deniedDualAuth"
        case .deniedSecondDualAuth: "deniedSecondDualAuth"
        case .deniedNotEscort: "deniedNotEscort"
        case .deniedTailgatingVisitors: "deniedTailgatingVisitors"
        case .deniedPassback: "deniedPassback"
        case .deniedTailgating: "deniedTailgating"
        case .deniedDualAuthRepeat: "deniedDualAuthRepeat"
        case .deniedChallenge: "deniedChallenge"
        case .deniedMobileNotSupported: "deniedMobileNotSupported"
        case .deniedCannotDisarmAlarmZone: "deniedCannotDisarmAlarmZone"
        case .deniedUnexpected: "deniedUnexpected"
        }
    }
}

/// The mode the reader was in when it decided (the SDK's `AccessMode`).
public enum AccessMode: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case access = 0
    case challenge = 1
    case evac = 2
    case search = 3

    public var description: String {
        switch self {
        case .access: "access"
        case .challenge: "challenge"
        case .evac: "evac"
        case .search: "search"
        }
    }
}

/// The SDK's `AccessResult`.
public struct AccessResult: Hashable, Sendable {
    public var decision: AccessDecision
    public var mode: AccessMode

    public init(decision: AccessDecision, mode: AccessMode) {
        self.decision = decision
        self.mode = mode
    }
}
