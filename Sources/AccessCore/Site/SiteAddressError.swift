/// Why an invitation URL, a site host or an invitation code was refused before any call.
public enum SiteAddressError: Error, Hashable, Sendable, CustomStringConvertible {
    case malformedCode
    case malformedURL(String)
    case unsupportedScheme(String)
    /// Plain HTTP to a host that is not loopback (docs/site-api.md §1).
    case insecureTransport(host: String)

    /// The stable code, as in docs/site-api.md.
    public var code: String {
        switch self {
        case .malformedCode: "invitation.malformed"
        case .malformedURL, .unsupportedScheme: "invitation.malformedURL"
        case .insecureTransport: "site.insecureTransport"
        }
    }

    public var description: String {
        switch self {
        case .malformedCode: "an invitation code is 16 characters of 0-9 and A-Z without I, L, O, U"
        case .malformedURL(let reason): "not an invitation URL: \(reason)"
        case .unsupportedScheme(let scheme): "scheme '\(scheme)' is not supported (https, or http to loopback)"
        case .insecureTransport(let host): "plain http is allowed only to a loopback host, not \(host)"
        }
    }
}
