import AccessCore
import ControlSocket
import NIOConcurrencyHelpers

/// Where each credential's audit upload stands, for `status.get`: written by the upload's
/// tasks, read without suspending.
final class AuditProgress: Sendable {
    let enabled: Bool
    private let entries = NIOLockedValueBox<[CredentialID: AuditSiteStatus]>([:])

    init(enabled: Bool) {
        self.enabled = enabled
    }

    func update(_ id: CredentialID, site: String, _ change: (inout AuditSiteStatus) -> Void) {
        entries.withLockedValue { entries in
            var entry = entries[id] ?? AuditSiteStatus(site: site, state: .current, backlog: 0, through: 0)
            change(&entry)
            entries[id] = entry
        }
    }

    /// The credential's upload, if it has begun.
    func status(of id: CredentialID) -> AuditSiteStatus? {
        entries.withLockedValue { $0[id] }
    }

    func state(of id: CredentialID) -> AuditSiteStatus.State? { status(of: id)?.state }

    func remove(_ id: CredentialID) {
        entries.withLockedValue { _ = $0.removeValue(forKey: id) }
    }

    var status: AuditStatus {
        let sites = entries.withLockedValue { Array($0.values) }.sorted { $0.site < $1.site }
        return AuditStatus(enabled: enabled, backlog: sites.reduce(0) { $0 + $1.backlog }, sites: sites)
    }
}
