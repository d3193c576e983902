import AccessCore

/// Why a call to a site failed. `code` is stable (it reaches clients as the RPC error's
/// `data.code`); the site's own error codes pass through unchanged.
public enum SiteError: Error, Sendable, CustomStringConvertible {
    case address(SiteAddressError)
    /// No connection: DNS, refused, TLS verification, reset.
    case unreachable(String)
    case timedOut
    /// The site answered with an error body (docs/site-api.md §5).
    case refused(status: Int, code: String, message: String)
    /// The site answered something that is not the API: not JSON, wrong fields, too large.
    case malformedAnswer(String)
    /// The site sent more than accessd keeps (docs/site-api.md §4.2): pages in one sync,
    /// items for one credential. What came before the limit is kept.
    case limitExceeded(String)
    /// The site's certificate verified, but its key is not one of `[site] pins`: another CA's
    /// certificate for the site's name (an impersonation), or a site that changed its key.
    case keyNotPinned(host: String, presented: String, pinned: [String])

    public var code: String {
        switch self {
        case .address(let error): error.code
        case .unreachable: "site.unreachable"
        case .timedOut: "site.timeout"
        case .refused(_, let code, _): code
        case .malformedAnswer: "site.malformedAnswer"
        case .limitExceeded: "site.limitExceeded"
        case .keyNotPinned: "site.keyNotPinned"
        }
    }

    /// Worth retrying later: the site or the way to it is down, not our request wrong.
    public var isTransient: Bool {
        switch self {
        // A sync cut at its page limit goes on from its cursor at the next.
        // A key not pinned: an impersonation may end, and a site's new pin arrives with a
        // restart; the failure stays reported meanwhile.
        case .unreachable, .timedOut, .malformedAnswer, .limitExceeded, .keyNotPinned: true
        case .refused(let status, _, _): status >= 500
        case .address: false
        }
    }

    public var description: String {
        switch self {
        case .address(let error): error.description
        case .unreachable(let reason): "the site cannot be reached: \(reason)"
        case .timedOut: "the site did not answer in time"
        case .refused(let status, let code, let message): "the site refused (\(status) \(code)): \(message)"
        case .malformedAnswer(let reason): "the site's answer is not the site API: \(reason)"
        case .limitExceeded(let reason): "the site sent too much: \(reason)"
        case .keyNotPinned(let host, let presented, let pinned):
            "the site at \(host) presented the key \(presented), which is not pinned ([site] pins: "
                + "\(pinned.joined(separator: ", "))): another CA's certificate for its name, or the site "
                + "changed its key (then add its new pin)"
        }
    }
}
