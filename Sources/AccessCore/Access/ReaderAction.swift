/// What a reader action does (the SDK's action ids -1…9; anything else is an output).
public enum ReaderActionType: Sendable, Hashable, CustomStringConvertible {
    case requestAccess
    case enumerate
    case arm
    case disarm
    case mode1
    case mode2
    case schedule
    /// Arm/disarm modes 6–9.
    case alarmMode(Int8)
    case output(Int8)

    public init(id: Int8) {
        switch id {
        case -1: self = .requestAccess
        case 0: self = .enumerate
        case 1: self = .arm
        case 2: self = .disarm
        case 3: self = .mode1
        case 4: self = .mode2
        case 5: self = .schedule
        case 6...9: self = .alarmMode(id)
        default: self = .output(id)
        }
    }

    public var description: String {
        switch self {
        case .requestAccess: "requestAccess"
        case .enumerate: "enumerate"
        case .arm: "arm"
        case .disarm: "disarm"
        case .mode1: "mode1"
        case .mode2: "mode2"
        case .schedule: "schedule"
        case .alarmMode: "alarmMode"
        case .output: "output"
        }
    }
}

/// The SDK's `ReaderAction(name, id, type)`.
public struct ReaderAction: Hashable, Sendable {
    public var id: Int8
    public var name: String
    public var type: ReaderActionType { ReaderActionType(id: id) }

    public init(id: Int8, name: String) {
        self.id = id
        self.name = name
    }
}
