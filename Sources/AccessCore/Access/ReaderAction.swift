/// What a reader action does (the SDK's action ids -1…9; anything else is an output).
public enum ReaderActionType: Sendable, Hashable, CustomStringConvertible {
    case requestAccess
    case enumerate
    case arm
    case disarm
    case mode1
    case mode2
    case schedule
    /// Ids 6–9, in the SDK's order: `ARM_MODE1`, `ARM_MODE2`, `DISARM_MODE1`, `DISARM_MODE2`.
    case armMode1, armMode2, disarmMode1, disarmMode2
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
        case 6: self = .armMode1
        case 7: self = .armMode2
        case 8: self = .disarmMode1
        case 9: self = .disarmMode2
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
        case .armMode1: "armMode1"
        case .armMode2: "armMode2"
        case .disarmMode1: "disarmMode1"
        case .disarmMode2: "disarmMode2"
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
