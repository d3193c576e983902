import AccessJSON
import FoundationEssentials

/// One method of the control socket as a value: its name and role (`method`), the params it
/// takes and the answer it gives, both `Codable`. `accessd` decodes the params and encodes
/// the answer with these types, and `accessctl` encodes and decodes with the same ones, as
/// chrony's `candm.h` serves `chronyd` and `chronyc` (docs/protocol.md shows them on the wire).
public protocol ControlCall: Sendable {
    associatedtype Params: Codable & Sendable
    associatedtype Answer: Codable & Sendable
    static var method: ControlMethod { get }
}

/// For methods that take nothing (an empty object, or no `params` at all).
public struct NoParams: Codable, Sendable, Hashable {
    public init() {}
}

/// Every method, by the types it speaks.
public enum ControlCalls {
    public enum StatusGet: ControlCall {
        public typealias Params = NoParams
        public typealias Answer = StatusAnswer
        public static let method = ControlMethod.statusGet
    }

    public enum ReadersList: ControlCall {
        public typealias Params = NoParams
        public typealias Answer = ReadersAnswer
        public static let method = ControlMethod.readersList
    }

    public enum EventsSubscribe: ControlCall {
        public typealias Params = SubscribeParams
        public typealias Answer = SubscribeAnswer
        public static let method = ControlMethod.eventsSubscribe
    }

    public enum EventsUnsubscribe: ControlCall {
        public typealias Params = NoParams
        public typealias Answer = UnsubscribeAnswer
        public static let method = ControlMethod.eventsUnsubscribe
    }

    public enum ScanningSet: ControlCall {
        public typealias Params = SwitchParams
        public typealias Answer = ScanningAnswer
        public static let method = ControlMethod.scanningSet
    }

    public enum AutomaticAccessSet: ControlCall {
        public typealias Params = SwitchParams
        public typealias Answer = AutomaticAccessAnswer
        public static let method = ControlMethod.automaticAccessSet
    }

    public enum LogSetLevel: ControlCall {
        public typealias Params = LogLevelParams
        public typealias Answer = LogLevelParams
        public static let method = ControlMethod.logSetLevel
    }

    public enum AccessRequest: ControlCall {
        public typealias Params = ReaderParams
        public typealias Answer = ExchangeAnswer
        public static let method = ControlMethod.accessRequest
    }

    public enum ActionsList: ControlCall {
        public typealias Params = ReaderParams
        public typealias Answer = ExchangeAnswer
        public static let method = ControlMethod.actionsList
    }

    public enum ActionsPerform: ControlCall {
        public typealias Params = ActionParams
        public typealias Answer = ExchangeAnswer
        public static let method = ControlMethod.actionsPerform
    }

    public enum SecondFactorRespond: ControlCall {
        public typealias Params = PinParams
        public typealias Answer = PinAnswer
        public static let method = ControlMethod.secondFactorRespond
    }

    public enum SecondFactorList: ControlCall {
        public typealias Params = NoParams
        public typealias Answer = PromptsAnswer
        public static let method = ControlMethod.secondFactorList
    }

    public enum SecondFactorCancel: ControlCall {
        public typealias Params = RequestParams
        public typealias Answer = CancelAnswer
        public static let method = ControlMethod.secondFactorCancel
    }

    public enum CredentialsSetPin: ControlCall {
        public typealias Params = SetPinParams
        public typealias Answer = CredentialInfo
        public static let method = ControlMethod.credentialsSetPin
    }

    public enum CredentialsSetPriority: ControlCall {
        public typealias Params = PriorityParams
        public typealias Answer = CredentialInfo
        public static let method = ControlMethod.credentialsSetPriority
    }

    public enum CredentialsUnlock: ControlCall {
        public typealias Params = CredentialIDParams
        public typealias Answer = CredentialInfo
        public static let method = ControlMethod.credentialsUnlock
    }

    public enum CredentialsRegister: ControlCall {
        public typealias Params = RegisterParams
        public typealias Answer = CredentialInfo
        public static let method = ControlMethod.credentialsRegister
    }

    public enum CredentialsList: ControlCall {
        public typealias Params = NoParams
        public typealias Answer = CredentialsAnswer
        public static let method = ControlMethod.credentialsList
    }

    public enum CredentialsDelete: ControlCall {
        public typealias Params = DeleteParams
        public typealias Answer = DeleteAnswer
        public static let method = ControlMethod.credentialsDelete
    }

    public enum ItemsSync: ControlCall {
        public typealias Params = NoParams
        public typealias Answer = SyncAnswer
        public static let method = ControlMethod.itemsSync
    }

    public enum ItemsList: ControlCall {
        public typealias Params = NoParams
        public typealias Answer = ItemsAnswer
        public static let method = ControlMethod.itemsList
    }

    /// The diagnostics bundle (`accessctl diagnose --bundle`'s layout), gathered by accessd.
    public enum DiagnosticsCollect: ControlCall {
        public typealias Params = NoParams
        public typealias Answer = JSONValue
        public static let method = ControlMethod.diagnosticsCollect
    }
}

extension JSONValue {
    /// This value as a `T` (the params of a request, the result of an answer).
    public func decode<T: Decodable>(_ type: T.Type) throws(RPCError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(jsonText.utf8))
        } catch DecodingError.dataCorrupted(let context) where context.codingPath.isEmpty {
            // Foundation's decoder says only "not valid JSON", with no field, for a number
            // that does not fit its field (1.5 or 1e30 for a whole number): the text is valid
            // JSON, our parser read it. Find the number.
            throw .invalidParams(misfitNumber(T.self) ?? "a number does not fit its field")
        } catch let error as DecodingError {
            throw .invalidParams(Self.describe(error))
        } catch {
            throw .invalidParams("\(error)")
        }
    }

    /// A `Codable` value as JSON (what goes on the wire).
    public init<T: Encodable>(encoding value: T) throws(RPCError) {
        do {
            self = try JSONValueEncoder.encode(value)
        } catch {
            throw .internalError("cannot encode \(T.self): \(error)")
        }
    }

    /// One sentence naming the field and what was wrong with it.
    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let names = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return names.isEmpty ? "params" : names.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let within = context.codingPath.isEmpty ? "" : "\(path(context)) "
            return "\(within)\(key.stringValue) is required"
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            return "\(path(context)) must be \(describe(type))"
        case .dataCorrupted(let context):
            return "\(path(context)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is Bool.Type: "true or false"
        case is String.Type: "a string"
        case is any BinaryInteger.Type: "a whole number"
        case is any BinaryFloatingPoint.Type: "a number"
        case is [String].Type: "a list of strings"
        default: "an object"
        }
    }

    /// Which number makes decoding `T` fail: each number of this value in turn is replaced by
    /// 0 (at most 16 tried); the one whose replacement lets decoding pass is named.
    private func misfitNumber<T: Decodable>(_ type: T.Type) -> String? {
        for (path, number) in numbers().prefix(16) {
            let replaced = replacing(path[...], with: .int(0))
            guard (try? JSONDecoder().decode(T.self, from: Data(replaced.jsonText.utf8))) != nil else { continue }
            let name = path.joined(separator: ".")
            if case .double(let value) = number, value.rounded() != value {
                return "\(name) must be a whole number"
            }
            return "\(name) is out of range"
        }
        return nil
    }

    /// The numbers in this value with their paths (object keys in order, array indexes).
    private func numbers(at path: [String] = []) -> [([String], JSONValue)] {
        switch self {
        case .int, .double: [(path, self)]
        case .object(let members): members.sorted { $0.key < $1.key }.flatMap { $0.value.numbers(at: path + [$0.key]) }
        case .array(let items): items.enumerated().flatMap { $0.element.numbers(at: path + ["[\($0.offset)]"]) }
        default: []
        }
    }

    private func replacing(_ path: ArraySlice<String>, with value: JSONValue) -> JSONValue {
        guard let first = path.first else { return value }
        switch self {
        case .object(var members):
            members[first] = members[first]?.replacing(path.dropFirst(), with: value)
            return .object(members)
        case .array(var items):
            guard let index = Int(first.dropFirst().dropLast()), items.indices.contains(index) else { return self }
            items[index] = items[index].replacing(path.dropFirst(), with: value)
            return .array(items)
        default:
            return self
        }
    }
}
