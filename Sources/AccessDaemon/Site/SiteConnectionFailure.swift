import NIOCore

/// One sentence with the fix for a site call that found no site, instead of the library's
/// error dump (`handshakeFailed(NIOSSL.BoringSSLError.sslError([… CERTIFICATE_VERIFY_FAILED at
/// .build/checkouts/…]))`). The libraries' errors are matched by the names they print, since
/// NIOSSL and NIOPosix do not expose them as one type to switch on; the short name stays in
/// parentheses for a search.
enum SiteConnectionFailure {
    static func sentence(for error: any Error, host url: String) -> String {
        let text = String(describing: error)
        let host = hostAndPort(url)
        switch error as? ChannelError {
        case .connectTimeout:
            // A host that drops connection attempts (a firewall, a wrong address on another
            // network): nothing refuses, so only the connect timeout ends the call.
            return "\(host) did not accept a connection in time (connect timeout): "
                + "check that this kiosk can reach it (address, firewall, proxy)"
        case .eof, .inputClosed, .ioOnClosedChannel, .alreadyClosed:
            return "\(host) closed the connection before answering"
        default: break
        }
        func has(_ markers: String...) -> Bool { markers.contains { text.contains($0) } }
        if has("CERTIFICATE_VERIFY_FAILED", "unableToValidateCertificate", "UNABLE_TO_GET_ISSUER", "SELF_SIGNED") {
            return "the certificate of \(host) is not trusted (CERTIFICATE_VERIFY_FAILED): "
                + "set [site] ca_file to the site's CA certificate"
        }
        if has("HOSTNAME_MISMATCH", "unableToValidateHostname", "invalidHostname") {
            return
                "the certificate of \(host) does not name it (hostname mismatch): use the name the certificate is for"
        }
        if has("CERTIFICATE_EXPIRED", "certificateExpired") {
            return "the certificate of \(host) has expired, or this kiosk's clock is wrong (timedatectl status)"
        }
        if has("handshakeFailed", "WRONG_VERSION_NUMBER", "sslError") {
            return "the TLS handshake with \(host) failed (is it https? a proxy in the way?)"
        }
        if has("connectionRefused", "Connection refused", "ECONNREFUSED") {
            return "nothing accepts connections at \(host) (connection refused)"
        }
        if has("NXDOMAIN", "dnsAError", "dnsAAAAError", "Name or service not known", "nodename nor servname") {
            return "the name in \(host) does not resolve (DNS)"
        }
        if has("Network is unreachable", "No route to host", "ENETUNREACH", "EHOSTUNREACH") {
            return "no route to \(host) (network down?)"
        }
        if has("Connection reset", "ECONNRESET", "remoteConnectionClosed", "uncleanShutdown") {
            return "\(host) closed the connection before answering"
        }
        if has("invalidURL", "emptyHost") { return "the site's address is not a URL accessd can call" }
        return "the connection to \(host) failed (\(type(of: error)))"
    }

    /// `host:port` of a URL, for the sentence.
    private static func hostAndPort(_ url: String) -> String {
        var rest = Substring(url)
        if let scheme = rest.firstRange(of: "://") { rest = rest[scheme.upperBound...] }
        return String(rest.prefix { $0 != "/" })
    }
}
