/// The query of a request's target (`?cursor=…&wait=…`), read the same way by every route
/// that takes one: item sync (§4.2), the change channel (§4.4), reader provisioning (§7).
struct SiteQuery {
    private let pairs: [Substring]

    init(_ target: String) {
        pairs = target.split(separator: "?", maxSplits: 1).dropFirst().first?.split(separator: "&") ?? []
    }

    /// The last value given for `name`, as sent (not percent-decoded).
    func value(_ name: String) -> Substring? {
        pairs.last { $0.hasPrefix(name + "=") }?.dropFirst(name.count + 1)
    }

    /// `cursor`: 0 when absent; a `request.invalid` answer when it is not one the site gave.
    /// `latest`: the newest change the site has made. A cursor beyond it was never given (a
    /// client that would follow it would miss every change up to it, revocations included).
    func cursor(latest: Int64) -> Parsed<Int64> {
        guard let text = value("cursor") else { return .ok(0) }
        guard let cursor = Int64(text), cursor >= 0 else {
            return .refused(.error(400, "request.invalid", "cursor must be a value a previous answer returned, or 0"))
        }
        guard cursor <= latest else {
            return .refused(
                .error(
                    400, "request.invalid",
                    "cursor \(cursor) was never given (the newest is \(latest)): start again from 0"))
        }
        return .ok(cursor)
    }

    /// `wait`, 0 to 60 seconds; `default` when absent.
    func wait(default: Double) -> Parsed<Double> {
        guard let text = value("wait") else { return .ok(`default`) }
        guard let wait = Double(text), (0...60).contains(wait) else {
            return .refused(.error(400, "request.invalid", "wait is 0 to 60 seconds"))
        }
        return .ok(wait)
    }

    /// A value, or the answer that refuses the request.
    enum Parsed<Value> {
        case ok(Value)
        case refused(SiteResponse)
    }
}
