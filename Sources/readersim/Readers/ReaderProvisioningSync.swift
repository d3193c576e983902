import AccessCore
import AccessDaemon
import Crypto
import Foundation
import NIOConcurrencyHelpers
import SiteContract

/// Keeps a reader controller's provisioning (docs/site-api.md §7) current: pages until
/// `more` is false, then one held call after another (`wait=25`), so that a change at the
/// site (a revocation above all) reaches the readers within about a second. Errors are
/// retried after 1 s, doubling up to 30 s; the readers go on deciding from what they have.
/// readersim keeps it in memory: a simulator starts from its site every time, where a
/// real reader must keep it on disk (§7, "What a reader stores").
final class ReaderProvisioningSync: Sendable {
    private let client: SiteClient
    private let site: SiteAddress
    /// The controller's own key: it authenticates provisioning calls and, in version 3, signs
    /// the readers' exchanges under the site's certificate for it.
    let key: P256.Signing.PrivateKey
    private let state = NIOLockedValueBox(ReaderProvisioningState())
    private let report: @Sendable (String, [String: Any]) -> Void

    init(
        client: SiteClient, site: SiteAddress, key: P256.Signing.PrivateKey,
        report: @escaping @Sendable (String, [String: Any]) -> Void
    ) {
        self.client = client
        self.site = site
        self.key = key
        self.report = report
    }

    var current: ReaderProvisioningState { state.withLockedValue { $0 } }

    struct NotProvisioned: Error, CustomStringConvertible {
        var description: String { "the site has not provisioned this reader controller yet" }
    }

    /// Pages until the reader has everything the site has now; throws the site's refusal.
    func catchUp() async throws(SiteError) {
        var more = true
        while more {
            let page = try await client.provisioning(site: site, readerKey: key, cursor: current.cursor, wait: .zero)
            try apply(page)
            more = page.more
        }
    }

    /// Follows the site until cancelled.
    func follow() async {
        var backoff = Duration.seconds(1)
        while !Task.isCancelled {
            do {
                let page = try await client.provisioning(
                    site: site, readerKey: key, cursor: current.cursor,
                    wait: .seconds(25))
                try apply(page)
                backoff = .seconds(1)
            } catch {
                if Task.isCancelled { return }
                report(
                    "provisioningError", ["detail": error.description, "retryInSeconds": backoff.components.seconds])
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(30))
            }
        }
    }

    /// Applies a page, or refuses it whole (another site's) as a malformed answer: the reader
    /// keeps what it has and tries again with its backoff.
    private func apply(_ page: ValidatedProvisioningPage) throws(SiteError) {
        let applied = state.withLockedValue {
            state -> Result<(String, ReaderProvisioningState), ProvisioningPageError> in
            let before = state.cursor
            do throws(ProvisioningPageError) {
                try state.apply(page)
            } catch {
                return .failure(error)
            }
            return .success((before, state))
        }
        let before: String
        let after: ReaderProvisioningState
        switch applied {
        case .success(let pair): (before, after) = pair
        case .failure(let error): throw .malformedAnswer(error.description)
        }
        // An empty held call changes nothing: no line for it.
        guard after.cursor != before || before == "0" else { return }
        report(
            "provisioned",
            [
                "cursor": after.cursor, "credentials": after.credentials.count,
                "aperio": after.aperio.count, "site": page.site.tag.description,
                // Whether the site allows versions 1-2 (it gave its private key): without it a
                // reader speaks only version 3, with a certificate naming it.
                "siteKey": page.site.signingKey != nil, "certificates": page.certificates.count,
            ])
    }
}
