import AccessCore
import AccessJSON
import AccessStore
import ControlSocket
import FoundationEssentials
import Logging
import NIOConcurrencyHelpers
import SiteContract

/// The audit upload (docs/site-api.md §4.5): each credential's access events go to its site,
/// in journal order, in batches, from a cursor kept in the store beside the credential. The
/// cursor moves only when the site acknowledges, so a kill of accessd or of the site loses
/// nothing and resends at most the batch in flight, which the site stores once (it keys
/// events by sequence). While a site is away its events wait in the journal (bounded by the
/// journal's retention: what retention removes unsent is announced to the site as a gap).
///
/// One task per credential (`PerCredentialTasks`): a site that hangs holds up only its own
/// credential's events. A task wakes when an event of the uploaded kinds is journalled, and
/// once a second to see whether a retry is due.
struct AuditUpload: Sendable {
    /// What a site is sent: decisions (access and actions, with their outcome, second-factor
    /// outcomes included), PIN prompts and what became of each PIN typed. Each carries the
    /// credential presented.
    static let kinds: Set<String> = Set(
        [EventKind.accessCompleted, .secondFactorRequired, .secondFactorAnswered].map(\.rawValue))
    static let retry = (first: 1, limit: 300)
    /// A site without the route is asked again this often (seconds): it may be upgraded.
    static let unsupportedRetry = 3600
    /// An idle credential's cursor is moved over other credentials' events this often
    /// (seconds), so that retention does not report them as a gap.
    static let idlePass = 60

    let site: SiteClient
    let book: CredentialBook
    let journal: EventJournal
    let progress: AuditProgress
    let clock: any Clock<Duration>
    let logger: Logger

    private var store: AccessStore { journal.store }

    func run() async {
        // A revoked credential's decisions still go: they are the record of what it did
        // until the site revoked it (docs/site-api.md §4.5).
        await PerCredentialTasks.run(book: book, clock: clock, revokedToo: true) { id in await upload(id) }
    }

    /// What one pass did.
    enum Outcome: Equatable {
        /// Nothing left to send.
        case current
        /// A batch was acknowledged and more are waiting.
        case more
        case failed(String, transient: Bool)
        /// The site has no events route.
        case unsupported
    }

    private enum Waiting {
        case idle(seconds: Int)
        case retry(inSeconds: Int, delay: Int)
    }

    private func upload(_ id: CredentialID) async {
        let (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        // Why the stream woke: an event journalled, a second passed (or both).
        let reasons = NIOLockedValueBox((journalled: true, ticked: false))
        let token = journal.watch(kinds: Self.kinds) {
            reasons.withLockedValue { $0.journalled = true }
            wake.yield()
        }
        defer {
            journal.unwatch(token)
            progress.remove(id)
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [clock] in
                while !Task.isCancelled {
                    try? await clock.sleep(for: .seconds(1))
                    reasons.withLockedValue { $0.ticked = true }
                    wake.yield()
                }
            }
            var waiting = Waiting.idle(seconds: Self.idlePass)
            for await _ in wakes {
                guard let stored = book.credential(id) else { break }
                let (news, tick) = reasons.withLockedValue { reasons in
                    defer { reasons = (false, false) }
                    return reasons
                }
                let elapsed = tick ? 1 : 0
                switch waiting {
                case .idle(let seconds) where !news && seconds + elapsed < Self.idlePass:
                    waiting = .idle(seconds: seconds + elapsed)
                    continue
                case .retry(let inSeconds, let delay) where inSeconds - elapsed > 0:
                    waiting = .retry(inSeconds: inSeconds - elapsed, delay: delay)
                    if news { recount(stored) }
                    progress.update(id, site: stored.siteName) { $0.retryInSeconds = inSeconds - elapsed }
                    continue
                default:
                    break
                }
                var outcome = await pass(stored)
                while outcome == .more && !Task.isCancelled { outcome = await pass(stored) }
                switch outcome {
                case .current, .more:
                    waiting = .idle(seconds: 0)
                case .unsupported:
                    waiting = .retry(inSeconds: Self.unsupportedRetry, delay: Self.retry.first)
                case .failed:
                    var delay = Self.retry.first
                    if case .retry(_, let previous) = waiting { delay = min(previous * 2, Self.retry.limit) }
                    waiting = .retry(inSeconds: delay, delay: delay)
                    progress.update(id, site: stored.siteName) { $0.retryInSeconds = delay }
                }
            }
            group.cancelAll()
        }
    }

    /// Sends the next batch, if any; the cursor moves when the site acknowledges it.
    func pass(_ stored: StoredCredential) async -> Outcome {
        let id = stored.credential.id
        let batch: AccessStore.AuditBatch
        let cursor: Int64
        do {
            guard let saved = try store.auditCursor(id.description) else { return .current }
            cursor = saved
            batch = try store.auditBatch(
                id.description, after: cursor, kinds: Self.kinds,
                limit: AuditUploadRequest.maximumEvents)
        } catch {
            return failed(stored, "the journal cannot be read: \(error)", transient: true)
        }
        var gap: AuditGap?
        if let oldest = batch.oldestKept, oldest > cursor + 1 { gap = AuditGap(from: cursor + 1, to: oldest - 1) }
        guard !batch.events.isEmpty || gap != nil else {
            // Nothing of this credential's: move over the other events, so that retention
            // removing them later is no gap.
            if batch.through > cursor { try? store.setAuditCursor(id.description, through: batch.through) }
            progress.update(id, site: stored.siteName) { entry in
                entry.state = .current
                entry.backlog = 0
                entry.through = max(cursor, batch.through)
                entry.error = nil
                entry.retryInSeconds = nil
            }
            return .current
        }
        let request = Self.fitted(batch, gap: gap)
        let acknowledged: Int64
        do {
            acknowledged = try await site.uploadEvents(of: stored, request)
        } catch {
            if case .refused(let status, _, _) = error, [404, 405, 501].contains(status) {
                if progress.state(of: id) != .unsupported {
                    logger.notice(
                        "the site takes no audit events; its access events stay in the journal",
                        metadata: ["credential": "\(id)", "site": "\(stored.siteName)"])
                }
                recount(stored)
                progress.update(id, site: stored.siteName) { entry in
                    entry.state = .unsupported
                    entry.error = error.description
                }
                return .unsupported
            }
            return failed(stored, error.description, transient: error.isTransient)
        }
        guard acknowledged > cursor else {
            return failed(
                stored, "the site acknowledged nothing after \(cursor) (it answered through \(acknowledged))",
                transient: false)
        }
        let through = min(acknowledged, request.through)
        do {
            try store.setAuditCursor(id.description, through: through)
        } catch {
            return failed(stored, "the cursor cannot be saved: \(error)", transient: true)
        }
        if let gap = request.gap {
            logger.warning(
                "audit events removed by retention before they were sent; the site is told",
                metadata: ["credential": "\(id)", "from": "\(gap.from)", "to": "\(gap.to)"])
        }
        logger.debug(
            "audit events sent",
            metadata: [
                "credential": "\(id)", "events": "\(request.events.count)",
                "through": "\(through)",
            ])
        let backlog = (try? store.auditBacklog(id.description, after: through, kinds: Self.kinds)) ?? 0
        progress.update(id, site: stored.siteName) { entry in
            entry.state = .current
            entry.backlog = backlog
            entry.through = through
            entry.error = nil
            entry.retryInSeconds = nil
            entry.lastUploadAt = Clocks.wall()
        }
        return backlog > 0 || through < request.through ? .more : .current
    }

    private func failed(_ stored: StoredCredential, _ reason: String, transient: Bool) -> Outcome {
        let id = stored.credential.id
        let previous = progress.status(of: id)
        if previous?.state != .failing || previous?.error != reason {
            logger.warning(
                "audit upload failed; the events wait in the journal",
                metadata: ["credential": "\(id)", "site": "\(stored.siteName)", "error": "\(reason)"])
        }
        recount(stored)
        progress.update(id, site: stored.siteName) { entry in
            entry.state = .failing
            entry.error = reason
        }
        return .failed(reason, transient: transient)
    }

    /// The backlog counted again (while the site is away, as events arrive).
    private func recount(_ stored: StoredCredential) {
        let id = stored.credential.id.description
        guard let cursor = try? store.auditCursor(id),
            let backlog = try? store.auditBacklog(id, after: cursor, kinds: Self.kinds)
        else { return }
        progress.update(stored.credential.id, site: stored.siteName) { entry in
            entry.backlog = backlog
            entry.through = cursor
        }
    }

    /// The batch as a request no larger than a site must accept (§4.5): events are left for
    /// the next batch until it fits.
    static func fitted(_ batch: AccessStore.AuditBatch, gap: AuditGap?) -> AuditUploadRequest {
        var events = batch.events.map { event in
            AuditEvent(
                seq: event.sequence, time: event.time, kind: event.kind,
                data: (try? JSONValue.parse(event.data)) ?? .null)
        }
        var request = AuditUploadRequest(through: batch.through, events: events, gap: gap)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        while events.count > 1, let size = try? encoder.encode(request).count, size > AuditUploadRequest.maximumBody {
            events.removeLast(events.count / 2)
            request = AuditUploadRequest(through: events[events.count - 1].seq, events: events, gap: gap)
        }
        return request
    }
}
