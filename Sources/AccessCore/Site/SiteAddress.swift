/// Where a site answers: scheme, host, port and path prefix (docs/site-api.md §2). Parsed
/// by hand because AccessCore does no I/O and takes no Foundation types; the parser accepts
/// only what an invitation URL can be.
public struct SiteAddress: Hashable, Sendable, CustomStringConvertible {
    public enum Scheme: String, Sendable { case http, https }

    public let scheme: Scheme
    /// A DNS name, an IPv4 address, or an IPv6 address without brackets.
    public let host: String
    public let port: Int?
    /// Empty, or starting with "/" and not ending with one.
    public let pathPrefix: String

    /// `scheme://host[:port]/prefix`, no trailing slash.
    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(scheme.rawValue)://\(shownHost)\(port.map { ":\($0)" } ?? "")\(pathPrefix)"
    }

    public var isLoopback: Bool {
        let lower = host.lowercased()
        if lower == "localhost" || lower == "::1" { return true }
        let parts = lower.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.first == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// An invitation URL: `<base>/v1/invitations/<CODE>`.
    public static func parseInvitation(_ text: String) throws(SiteAddressError) -> (SiteAddress, InvitationCode) {
        let (address, path) = try parse(text.trimmingSpaces, defaultScheme: nil)
        let marker = "/v1/invitations/"
        guard let range = path.ranges(of: marker).last else {
            throw .malformedURL("the path must end in /v1/invitations/<code>")
        }
        let codeText = String(path[range.upperBound...])
        guard !codeText.contains("/") else { throw .malformedURL("the path must end in /v1/invitations/<code>") }
        let code = try InvitationCode(codeText)
        let prefix = String(path[..<range.lowerBound])
        return (SiteAddress(scheme: address.scheme, host: address.host, port: address.port, pathPrefix: prefix), code)
    }

    /// A site host as an operator types it (`access.example.com`, `127.0.0.1:8700`,
    /// `http://127.0.0.1:8700`): https unless a scheme is given.
    public static func parseHost(_ text: String) throws(SiteAddressError) -> SiteAddress {
        let (address, path) = try parse(text.trimmingSpaces, defaultScheme: .https)
        guard path.isEmpty || path == "/" else {
            return SiteAddress(
                scheme: address.scheme, host: address.host, port: address.port,
                pathPrefix: path.hasSuffix("/") ? String(path.dropLast()) : path)
        }
        return address
    }

    public init(scheme: Scheme, host: String, port: Int?, pathPrefix: String) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.pathPrefix = pathPrefix
    }

    /// Refuses plain HTTP to anything but loopback.
    public func checkTransport() throws(SiteAddressError) {
        if scheme == .http && !isLoopback { throw .insecureTransport(host: host) }
    }

    public func url(_ path: String) -> String { description + path }

    private static func parse(_ text: String, defaultScheme: Scheme?) throws(SiteAddressError) -> (SiteAddress, String)
    {
        guard !text.isEmpty, text.utf8.count <= 2048 else { throw .malformedURL("empty or longer than 2048 bytes") }
        guard text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            throw .malformedURL("only printable ASCII without spaces")
        }
        var rest = Substring(text)
        let scheme: Scheme
        if let separator = rest.firstRange(of: "://") {
            let name = rest[..<separator.lowerBound].lowercased()
            guard let known = Scheme(rawValue: name) else { throw .unsupportedScheme(name) }
            scheme = known
            rest = rest[separator.upperBound...]
        } else if let defaultScheme {
            scheme = defaultScheme
        } else if (try? InvitationCode(text)) != nil {
            // The code alone, as it is read out over the phone: the site is missing, not a scheme.
            throw .malformedURL(
                "that is an invitation code without its site: give both (accessctl credentials register --host SITE --code \(text))"
            )
        } else {
            throw .malformedURL("no scheme (https://…)")
        }
        if let cut = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<cut] }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        let path = String(rest[slash...])
        // An empty segment would make a prefix that ends in "/" (fuzzing found "hy//"), and
        // every call's path would then start with "//".
        guard !path.contains("//") else { throw .malformedURL("an empty path segment (//)") }
        guard !authority.contains("@") else { throw .malformedURL("user information is not allowed") }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw .malformedURL("unclosed [ in the host") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw .malformedURL("junk after the host") }
                portText = after.dropFirst()
            }
            guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw .malformedURL("bad IPv6 address")
            }
        } else {
            if let colon = authority.firstIndex(of: ":") {
                host = authority[..<colon]
                portText = authority[authority.index(after: colon)...]
            } else {
                host = authority
            }
            guard !host.isEmpty, host.utf8.count <= 253,
                host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." })
            else {
                throw .malformedURL("bad host name")
            }
        }
        var port: Int?
        if let portText {
            guard let number = Int(portText), (1...65535).contains(number) else { throw .malformedURL("bad port") }
            port = number
        }
        return (SiteAddress(scheme: scheme, host: String(host).lowercased(), port: port, pathPrefix: ""), path)
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        trimming { $0 == " " || $0 == "\t" || $0 == "\n" }
    }
}
