import AccessJSON
import ControlSocket
import FoundationEssentials

/// `diagnose`'s site check, from what accessd knows (accessctl makes no site call of its
/// own: the site is accessd's to reach, with its CA file and its clock): whether the last
/// calls failed and why (the newest `feature.state` error), and for an admin when each
/// credential's site was last synced.
enum SiteCheck {
    static func check(_ status: StatusAnswer, connection: ControlConnection) -> Diagnose.Check {
        let failing = status.featureErrors.filter { ["cloudConnection", "itemSync"].contains($0) }
        var syncs: [String] = []
        if case .success(let listed)? = try? connection.call(.credentialsList),
            let credentials = try? listed.decode(CredentialsAnswer.self).credentials
        {
            for credential in credentials {
                let age = credential.lastSyncAt.map { ago(Date().timeIntervalSince1970 - $0) } ?? "never synced"
                syncs.append("\(credential.siteName) (\(credential.siteURL)): last sync \(age)")
            }
        }
        if failing.isEmpty {
            return Diagnose.Check(
                name: "site", ok: true,
                detail: syncs.isEmpty ? "the last calls succeeded" : syncs.joined(separator: "; "))
        }
        let reason = lastFeatureError(connection, lastSequence: status.lastSequence) ?? failing.joined(separator: ", ")
        return Diagnose.Check(
            name: "site", ok: false,
            detail: ([reason] + syncs).joined(separator: "; "),
            hint: hint(for: reason))
    }

    /// The newest `feature.state` error among the last 1,000 events.
    private static func lastFeatureError(_ connection: ControlConnection, lastSequence: Int64) -> String? {
        let params = SubscribeParams(since: max(0, lastSequence - 1000), kinds: [EventKind.featureState.rawValue])
        guard let encoded = try? JSONValue(encoding: params),
            case .success? = try? connection.call(.eventsSubscribe, encoded)
        else { return nil }
        var error: String?
        while connection.waitReadable(timeout: .milliseconds(200)),
            let notification = try? connection.nextNotification()
        {
            guard case .featureState(let feature)? = ControlEvent(eventNotification: notification) else { continue }
            error = feature.state == .failed ? (feature.message ?? feature.error) : nil
        }
        return error
    }

    /// What to do for the site errors accessd names (docs/operations.md, "Site errors").
    private static func hint(for reason: String) -> String {
        if reason.contains("ca_file") { return "set [site] ca_file to the site's CA, then restart accessd" }
        if reason.contains("cannot be reached") || reason.contains("in time") || reason.contains("site.unreachable")
            || reason.contains("site.timeout")
        {
            return "check the network and the site's address"
        }
        if reason.contains("auth") { return "the site refused this kiosk: re-register the credential" }
        return "accessctl events --kinds feature.state shows each attempt"
    }

    private static func ago(_ seconds: Double) -> String {
        if seconds < 90 { return "\(Int(seconds)) s ago" }
        if seconds < 5_400 { return "\(Int(seconds / 60)) min ago" }
        if seconds < 172_800 { return "\(Int(seconds / 3_600)) h ago" }
        return "\(Int(seconds / 86_400)) d ago"
    }
}
