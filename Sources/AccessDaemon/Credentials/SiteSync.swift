import AccessCore
import AccessJSON
import AccessStore
import ControlSocket
import Logging

/// The background sync of every credential's state and items with its site: one consumer of
/// a stream of sync requests (the schedule's, `items.sync`'s, a registration's), so syncs never
/// overlap and a request made during one is served by the next. Reports `feature.state` and
/// the SDK state's feature errors.
actor SiteSync {
    /// Item pages one sync of one credential reads; the rest comes at the next sync, from
    /// the cursor. A site answering `more: true` forever made 964 calls and stored 480,010
    /// items in 40 s, and `items.sync` never returned (issue #17).
    static let maximumPagesPerSync = 100
    /// Items kept for one credential (docs/site-api.md §4.2).
    static let maximumItemsPerCredential = 10_000

    private struct Request: Sendable {
        var id: UInt64
        var reason: String
    }

    let site: SiteClient
    let book: CredentialBook
    let journal: EventJournal
    let sdk: SdkStatePublisher
    let interval: Duration
    let clock: any Clock<Duration>
    let logger: Logger
    private let requests: AsyncStream<Request>.Continuation
    private let stream: AsyncStream<Request>
    private var schedule = SyncSchedule()
    private var features: [String: FeatureState] = [:]
    /// Callers of `items.sync` waiting for their sync to end, by request number.
    private var waiting = PendingAnswers<SyncAnswer>()
    /// Syncs since start by result (`ok` or the first failure's code), for the metrics.
    private(set) var outcomes: [String: Int] = [:]

    init(
        site: SiteClient, book: CredentialBook, journal: EventJournal, sdk: SdkStatePublisher, interval: Duration,
        clock: any Clock<Duration>, logger: Logger
    ) {
        self.site = site
        self.book = book
        self.journal = journal
        self.sdk = sdk
        self.interval = interval
        self.clock = clock
        self.logger = logger
        (stream, requests) = AsyncStream<Request>.makeStream()
    }

    /// Serves sync requests, and asks for one whenever the schedule says a sync is due.
    func run() async throws {
        try await consumeWhileTicking(clock: clock) {
            for await request in self.stream { await self.serve(request) }
        } tick: {
            await self.askIfDue()
        }
        waiting.close()
    }

    /// `items.sync`: a sync now, answered when it ends.
    /// Answered `shuttingDown` at once when the sync has stopped, or when the caller is
    /// cancelled while it waits.
    func syncNow(reason: String) async -> Result<SyncAnswer, RPCError> {
        let id = waiting.number()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                guard !Task.isCancelled else { return continuation.resume(returning: PendingAnswers.shuttingDown) }
                guard waiting.wait(id, continuation) else { return }
                requests.yield(Request(id: id, reason: reason))
            }
        } onCancel: {
            Task { await self.abandon(id) }
        }
    }

    private func abandon(_ id: UInt64) {
        waiting.answer(id, PendingAnswers.shuttingDown)
    }

    /// The next check runs a sync for `credential`, just registered, so its items arrive at once.
    func syncSoon(for credential: CredentialID) { schedule.forceDue(for: credential.description) }

    var featureErrors: [String] { features.filter { !$0.value.ok }.keys.sorted() }

    private func askIfDue() {
        // Time passing can withhold a credential (`[site] max_offline`) with nothing else happening.
        if book.refreshOffline(now: Clocks.wall()) {
            logger.warning(
                "credentials withheld or back by the offline limit",
                metadata: ["withheld": "\(book.offlineCredentials.map(\.description).sorted())"])
            book.changed()
        }
        guard book.credentials.contains(where: { $0.keyProblem == nil }), schedule.isDue(at: Clocks.monotonic()) else {
            return
        }
        schedule.inProgress = true
        requests.yield(Request(id: waiting.number(), reason: "scheduled"))
    }

    private func serve(_ request: Request) async {
        // A credential whose key does not open cannot sign a call: asking its site would only
        // turn "keyUnavailable" into a misleading site failure.
        let ids = book.credentials.filter { $0.keyProblem == nil }.map(\.credential.id)
        schedule.started(reading: Set(ids.map(\.description)))
        let answer = await syncAll(ids, reason: request.reason)
        waiting.answer(request.id, .success(answer))
    }

    /// Syncs the state and items of each of `ids`.
    private func syncAll(_ ids: [CredentialID], reason: String) async -> SyncAnswer {
        var results: [CredentialSync] = []
        var failure: SiteError?
        for id in ids {
            do {
                results.append(try await syncOne(id))
            } catch {
                failure = failure ?? error
                results.append(CredentialSync(id: id.description, error: error.code, message: error.description))
            }
        }
        let delay = schedule.finished(success: failure == nil, interval: interval, at: Clocks.monotonic())
        if !results.isEmpty { outcomes[failure?.code ?? "ok", default: 0] += 1 }
        if let failure {
            logger.warning(
                "site sync failed",
                metadata: [
                    "reason": "\(reason)", "error": "\(failure)", "retryInSeconds": "\(delay.components.seconds)",
                ])
            setFeature(
                failure.isTransient ? "cloudConnection" : "itemSync", ok: false, error: failure.code,
                message: failure.description, retryIn: delay)
        } else if !results.isEmpty {
            setFeature("cloudConnection", ok: true, error: nil)
            setFeature("itemSync", ok: true, error: nil)
        }
        return SyncAnswer(credentials: results, nextSyncInSeconds: delay.components.seconds)
    }

    /// One credential: its state first (a revoked credential gets no items), then every
    /// page of item changes since its cursor, each page stored atomically with the cursor.
    /// The book is read again after every call to the site: it may have changed meanwhile.
    private func syncOne(_ id: CredentialID) async throws(SiteError) -> CredentialSync {
        guard let stored = book.credential(id) else { return CredentialSync(id: id.description, state: "deleted") }
        var state = stored.credential.state
        do {
            state = try await site.status(of: stored).state
        } catch let error where error.code == "credential.unknown" {
            // The site deleted it: it can never be used again.
            state = .revoked
        }
        if let current = book.credential(id), state != current.credential.state {
            book.setState(state, of: id)
            logger.notice(
                "credential state changed by the site", metadata: ["credential": "\(id)", "state": "\(state.rawValue)"])
            journal.emit(CredentialsChangedEvent(reason: .state, credential: id.description, state: state.rawValue))
            book.changed()
        }
        var counts = (added: 0, updated: 0, removed: 0)
        // Stopped early (the site failed, or sent more than accessd keeps): what was stored
        // before stays, with its cursor, and is announced; then the sync fails.
        var failure: SiteError?
        if state == .active {
            var cursor = stored.itemCursor
            var held = Set(book.items.filter { $0.credentialID == id }.map(\.id))
            var pages = 0
            // A cursor the site says it never gave (a site restored from a backup): the items
            // are read again from 0, once, and what the site no longer lists is dropped.
            var notListedAgain: Set<String>?
            while let current = book.credential(id) {
                guard pages < Self.maximumPagesPerSync else {
                    failure = .limitExceeded("more than \(Self.maximumPagesPerSync) pages of items in one sync")
                    break
                }
                pages += 1
                var page: SiteClient.ItemPage
                do {
                    page = try await site.items(of: current, after: cursor)
                } catch let error where Self.isCursorNeverGiven(error) && cursor != "0" && notListedAgain == nil {
                    logger.warning(
                        "the site does not know the item cursor; reading every item again",
                        metadata: ["credential": "\(id)", "cursor": "\(cursor)", "error": "\(error)"])
                    notListedAgain = held
                    cursor = "0"
                    continue
                } catch {
                    failure = error
                    break
                }
                if notListedAgain != nil {
                    notListedAgain?.subtract(page.items.map(\.id))
                    if !page.more, let gone = notListedAgain, !gone.isEmpty {
                        page.removed += gone.sorted()
                    }
                }
                let removed = Set(page.removed).intersection(held)
                let kept = held.union(page.items.map(\.id)).subtracting(removed)
                guard kept.count <= Self.maximumItemsPerCredential else {
                    failure = .limitExceeded("more than \(Self.maximumItemsPerCredential) items for one credential")
                    break
                }
                do {
                    try book.applyItemPage(
                        credential: id, upserted: page.items, removed: page.removed, cursor: page.cursor,
                        withdrawnCertificates: page.withdrawnCertificates)
                } catch {
                    failure = .malformedAnswer("cannot store the items: \(error)")
                    break
                }
                for item in page.items { if held.contains(item.id) { counts.updated += 1 } else { counts.added += 1 } }
                counts.removed += removed.count
                held = kept
                cursor = page.cursor
                guard page.more else { break }
            }
        }
        if counts.added + counts.updated + counts.removed > 0 {
            book.reloadItems()
            journal.emit(
                CredentialsChangedEvent(
                    reason: .items, credential: id.description, added: counts.added,
                    updated: counts.updated, removed: counts.removed))
            book.changed()
        }
        if let failure { throw failure }
        return CredentialSync(
            id: id.description, state: state.rawValue, added: counts.added, updated: counts.updated,
            removed: counts.removed)
    }

    /// The site's refusal of a cursor it never gave (docs/site-api.md §4.1, §7.3).
    static func isCursorNeverGiven(_ error: SiteError) -> Bool {
        if case .refused(400, "request.invalid", let message) = error { return message.contains("cursor") }
        return false
    }

    /// Emits `feature.state` when a feature's state changes, and keeps the SDK state's list
    /// of features in error.
    func setFeature(_ feature: String, ok: Bool, error: String?, message: String? = nil, retryIn: Duration? = nil) {
        let state = FeatureState(ok: ok, error: error, message: message)
        guard features[feature] != state else { return }
        features[feature] = state
        journal.emit(
            FeatureStateEvent(
                feature: feature, state: ok ? .ok : .failed, error: error, message: message,
                retryInSeconds: retryIn.map { Int($0.components.seconds) }))
        sdk.update {
            if ok { $0.featureSyncErrors.remove(feature) } else { $0.featureSyncErrors.insert(feature) }
        }
    }
}
