import AccessCore
import AccessStore
import Logging

/// The site's change channel (docs/site-api.md §4.4): one long poll held open per credential,
/// so that a suspension, a revocation or an item change reaches a connected kiosk in about a
/// second instead of at the next background sync (`[site] sync_interval`, 15 min by default).
/// When the version the site reports changes, a sync runs (`SiteSync`), which is what applies
/// the change: the channel carries no data, only "look now", so a lost or forged answer can do
/// no more than cause a sync. The background sync stays as the fallback.
///
/// Why a long poll rather than server-sent events or a WebSocket: it is one more signed GET
/// of the API every site already serves, it passes proxies that buffer streams, and each
/// answer is checked and bounded like every other call. A site without the route (404, 405 or
/// 501) is left to the background sync, said once in the log.
struct SiteWatch: Sendable {
    /// How long the site holds a call with nothing new: short enough that a dead connection
    /// is noticed, long enough that an idle kiosk makes two calls a minute per credential.
    static let wait: Duration = .seconds(25)
    static let retry = (first: Duration.seconds(5), limit: Duration.seconds(300))
    /// A floor and a budget, whatever the site answers: at most one call a second per
    /// credential, and syncs for the channel's sake from a budget of three that refills one
    /// every five seconds (changes meanwhile are all in the next sync), so a suspension then a
    /// revocation a moment later both arrive at once. A site or proxy that answered at once
    /// made 133-403 calls a second, and 37 syncs a second when its version changed each time
    /// (issue #33).
    static let floor: Duration = .seconds(1)
    static let syncBudget = (burst: 3.0, refill: Duration.seconds(5))

    let site: SiteClient
    let book: CredentialBook
    let sync: SiteSync
    let clock: any Clock<Duration>
    let logger: Logger

    /// Watches every credential held, starting and stopping watches as credentials come and
    /// go, until cancelled.
    func run() async {
        await PerCredentialTasks.run(book: book, clock: clock) { id in await watch(id) }
    }

    private func watch(_ id: CredentialID) async {
        var since: String?
        var delay = Self.retry.first
        var budget = Self.syncBudget.burst
        var budgetAt = Clocks.monotonic()
        while !Task.isCancelled {
            guard let stored = book.credential(id), stored.credential.state != .revoked else { return }
            let started = Clocks.monotonic()
            do {
                let version = try await site.changes(of: stored, since: since, wait: Self.wait)
                if let since, version != since {
                    let refill = Self.syncBudget.refill
                    budget = min(Self.syncBudget.burst, budget + (Clocks.monotonic() - budgetAt) / refill)
                    budgetAt = Clocks.monotonic()
                    if budget < 1 {
                        try? await clock.sleep(for: refill * (1 - budget))
                        budget = 1
                        budgetAt = Clocks.monotonic()
                    }
                    budget -= 1
                    logger.info("the site reports a change; syncing", metadata: ["credential": "\(id)"])
                    _ = await sync.syncNow(reason: "site change")
                }
                since = version
                delay = Self.retry.first
                let took = Clocks.monotonic() - started
                if took < Self.floor { try? await clock.sleep(for: Self.floor - took) }
            } catch {
                // A site of the API before §4.4: no such route (404), or no GET on it (405, 501).
                if case .refused(let status, _, _) = error, [404, 405, 501].contains(status), book.credential(id) != nil
                {
                    logger.notice(
                        "the site has no change channel; its changes arrive with the background sync",
                        metadata: ["credential": "\(id)"])
                    return
                }
                if Task.isCancelled { return }
                logger.debug(
                    "change channel failed; trying again",
                    metadata: [
                        "credential": "\(id)", "error": "\(error.code)",
                        "retryInSeconds": "\(delay.components.seconds)",
                    ])
                try? await clock.sleep(for: delay)
                delay = min(delay * 2, Self.retry.limit)
            }
        }
    }
}
