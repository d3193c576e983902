import AccessCore
import AccessStore
import ControlSocket
import Crypto
import Logging
import NIOConcurrencyHelpers

/// The credentials and items accessd holds: the store's rows kept in memory, each change
/// written to the store first. Every service reads it without suspending (a lock, not an
/// actor); `changed` tells the rest of the daemon (availability, SDK state) after each change.
public final class CredentialBook: Sendable {
    struct Contents {
        var credentials: [StoredCredential]
        var items: [StoredItem]
        /// Credentials withheld by the offline limit, as of the last `refreshOffline`.
        var offline: Set<CredentialID> = []
        /// Items outside their validity window, as of the last `refreshOffline` (credential, id).
        var outOfWindow: Set<[String]> = []
        /// Credentials whose PIN is being changed (one change at a time each).
        var pinChanges: Set<CredentialID> = []
    }

    /// What a second-factor attempt was charged against.
    struct ChargedAttempt: Sendable {
        var sealed: SealedSecondFactorKey
        var attemptsLeftAfterCharge: Int
    }

    let store: AccessStore
    let pinAttempts: Int
    /// `[site] max_offline` in seconds: an active credential whose site was not synced with
    /// for longer is not presented (nil: no limit).
    let maxOffline: Double?
    private let contents: NIOLockedValueBox<Contents>
    private let changedHandler: NIOLockedValueBox<@Sendable () -> Void>
    private let logger: Logger

    init(store: AccessStore, pinAttempts: Int, maxOffline: Double? = nil, logger: Logger) throws {
        self.store = store
        self.pinAttempts = pinAttempts
        self.maxOffline = maxOffline
        self.logger = logger
        self.contents = NIOLockedValueBox(Contents(credentials: try store.credentials(), items: try store.items()))
        self.changedHandler = NIOLockedValueBox({})
        _ = refreshOffline(now: Clocks.wall())
        reportKeyProblems()
    }

    /// Every credential and item whose key does not open or fails its self-test, in the journal:
    /// at start and after each change, as the store reads them back.
    private func reportKeyProblems() {
        for stored in credentials {
            guard let problem = stored.keyProblem else { continue }
            logger.error(
                "credential key unavailable: it is not presented",
                metadata: ["credential": "\(stored.credential.id)", "reason": "\(problem)"])
        }
        for item in items {
            guard let problem = item.keyProblem else { continue }
            logger.error(
                "Aperio key unavailable: the item is not presented",
                metadata: ["credential": "\(item.credentialID)", "item": "\(item.id)", "reason": "\(problem)"])
        }
    }

    /// Called after every change (set once, when the daemon is wired).
    func onChange(_ handler: @escaping @Sendable () -> Void) {
        changedHandler.withLockedValue { $0 = handler }
    }

    /// Tells the rest of the daemon the credentials changed. The PIN counts notify by
    /// themselves; other changes are notified by their caller once it has journalled them,
    /// so `credentials.changed` comes before the `sdk.state` it causes.
    func changed() {
        changedHandler.withLockedValue { $0 }()
    }

    var credentials: [StoredCredential] { contents.withLockedValue { $0.credentials } }

    /// `status.get`'s `secrets`.
    var secretsStatus: SecretsStatus {
        let atRest = store.secretsAtRest
        return SecretsStatus(
            protection: atRest.protection, sealedToMachine: ["tpm2", "host"].contains(atRest.protection),
            keyOrigin: atRest.keyOrigin, problem: atRest.problem,
            keyUnavailable: credentials.filter { $0.keyProblem != nil }.count)
    }
    var items: [StoredItem] { contents.withLockedValue { $0.items } }

    func credential(_ id: CredentialID) -> StoredCredential? {
        contents.withLockedValue { $0.credentials.first { $0.credential.id == id } }
    }

    // MARK: Derived

    /// Recomputes which credentials the offline limit withholds at `now` (the last successful
    /// sync, else the registration, older than `max_offline`); true when that changed, for
    /// the caller to notify (`changed`).
    /// Items' validity windows are followed the same way: an item entering or leaving its
    /// window changes what can be presented with nothing else happening.
    func refreshOffline(now: Double) -> Bool {
        contents.withLockedValue { contents in
            let offline =
                maxOffline.map { limit in
                    Set(
                        contents.credentials.filter {
                            $0.credential.isUsable && ($0.lastSyncAt ?? $0.registeredAt) < now - limit
                        }.map(\.credential.id))
                } ?? []
            let outOfWindow = Set(
                contents.items.filter { !$0.isValid(at: now) }.map { [$0.credentialID.description, $0.id] })
            guard offline != contents.offline || outOfWindow != contents.outOfWindow else { return false }
            contents.offline = offline
            contents.outOfWindow = outOfWindow
            return true
        }
    }

    var offlineCredentials: Set<CredentialID> { contents.withLockedValue { $0.offline } }

    /// Which sites and lock kinds can be presented to, and the SDK state's counts.
    func availability(aperioEnabled: Bool) -> CredentialAvailability {
        contents.withLockedValue { contents in
            let presentable = contents.credentials.filter { !contents.offline.contains($0.credential.id) }
            var availability = Credential.availability(of: presentable.map(\.credential))
            for stored in contents.credentials
            where contents.offline.contains(stored.credential.id)
                && !availability.mobileSites.contains(stored.credential.siteTag)
            {
                availability.offlineSites.insert(stored.credential.siteTag)
            }
            for stored in contents.credentials where stored.credential.isUsable && stored.priority != 0 {
                availability.priorities[stored.credential.siteTag] = stored.priority
            }
            guard aperioEnabled else { return availability }
            for item in contents.items
            where item.state == .active && item.aperioSecret != nil
                && !contents.outOfWindow.contains([item.credentialID.description, item.id])
            {
                if let tag = item.siteTag,
                    let owner = presentable.first(where: {
                        $0.credential.id == item.credentialID && $0.credential.state == .active
                    })
                {
                    availability.aperioSites.insert(tag)
                    if owner.priority != 0 {
                        availability.priorities[tag] = max(availability.priorities[tag] ?? .min, owner.priority)
                    }
                }
            }
            return availability
        }
    }

    func applyCounts(to inputs: inout SdkStateInputs) {
        let offline = offlineCredentials
        let usable = credentials.filter { $0.credential.isUsable && !offline.contains($0.credential.id) }
        inputs.usableCredentialCount = usable.count
        inputs.offlineCredentialCount = offline.count
        inputs.keyUnavailableCredentialCount = credentials.filter { $0.keyProblem != nil }.count
        inputs.credentialsMissingSecondFactor =
            usable.filter {
                $0.credential.secondFactorEnabled && $0.credential.sealedSecondFactor == nil
            }.count
        inputs.secondFactorLockedOut = usable.contains { $0.failedPinAttempts >= pinAttempts }
    }

    /// The controller certificates a site has withdrawn (reader protocol §1.1), as the item
    /// sync of any credential of that site (its tag and key) last listed them.
    func withdrawnCertificates(siteTag: SiteTag, siteKey: P256.Signing.PublicKey) -> Set<UInt64> {
        contents.withLockedValue { contents in
            contents.credentials.reduce(into: Set<UInt64>()) { withdrawn, stored in
                guard stored.credential.siteTag == siteTag,
                    stored.credential.sitePublicKey.x963Representation == siteKey.x963Representation
                else { return }
                withdrawn.formUnion(stored.withdrawnCertificates)
            }
        }
    }

    /// What is presented to this reader, the credential it belongs to, and the key its
    /// challenges must verify against.
    /// `only`: the credential asked for (`access.request {credential}`); nil when it cannot be
    /// presented to this reader.
    func presentation(for reader: ReaderAttributes, aperioEnabled: Bool, only: CredentialID? = nil)
        -> (CredentialSession.Presentation, CredentialID, P256.Signing.PublicKey)?
    {
        contents.withLockedValue { contents in
            let credentials = contents.credentials.filter {
                (only == nil || $0.credential.id == only) && !contents.offline.contains($0.credential.id)
            }
            .sorted { $0.priority > $1.priority }
            let active = credentials.filter { $0.credential.isUsable && $0.credential.siteTag == reader.siteTag }
            switch reader.kind {
            case .gallagherStyle:
                guard let stored = active.first, let key = stored.credential.signingKey else { return nil }
                return (.mobile(stored.credential.id, key), stored.credential.id, stored.credential.sitePublicKey)
            case .aperioStyle:
                guard aperioEnabled else { return nil }
                // The highest-priority credential holding the lock's item.
                for owner in credentials where owner.credential.isUsable {
                    for item in contents.items
                    where item.credentialID == owner.credential.id && item.state == .active
                        && item.siteTag == reader.siteTag && item.isValid(at: Clocks.wall())
                    {
                        guard let secret = item.aperioSecret else { continue }
                        return (.aperio(secret), owner.credential.id, owner.credential.sitePublicKey)
                    }
                }
                return nil
            }
        }
    }

    // MARK: Second factor

    /// Charges one PIN attempt before the key derivation, persisted, so that PINs evaluated
    /// at once never exceed the attempts left (`SecondFactorGuard`).
    func chargePinAttempt(_ id: CredentialID, pin: String) throws(SecondFactorError) -> ChargedAttempt {
        let charged = contents.withLockedValue { contents -> Result<(ChargedAttempt, Int), SecondFactorError> in
            guard let index = contents.credentials.firstIndex(where: { $0.credential.id == id }),
                let sealed = contents.credentials[index].credential.sealedSecondFactor
            else { return .failure(.malformedSealedKey) }
            var attempts = SecondFactorGuard(
                maximumAttempts: pinAttempts,
                failedAttempts: contents.credentials[index].failedPinAttempts)
            do throws(SecondFactorError) {
                try attempts.charge(pin: pin)
            } catch {
                return .failure(error)
            }
            contents.credentials[index].failedPinAttempts = attempts.failedAttempts
            return .success(
                (
                    ChargedAttempt(sealed: sealed, attemptsLeftAfterCharge: attempts.attemptsLeft),
                    attempts.failedAttempts
                ))
        }
        switch charged {
        case .success((let attempt, let count)):
            persistPinAttempts(id, count)
            return attempt
        case .failure(let error):
            throw error
        }
    }

    /// The charged PIN was right: the count starts again.
    func pinSucceeded(_ id: CredentialID) {
        let reset = contents.withLockedValue { contents -> Bool in
            guard let index = contents.credentials.firstIndex(where: { $0.credential.id == id }),
                contents.credentials[index].failedPinAttempts != 0
            else { return false }
            contents.credentials[index].failedPinAttempts = 0
            return true
        }
        if reset { persistPinAttempts(id, 0) }
    }

    /// The PIN changed: the key sealed under the new one, and the count starts again.
    /// False when the credential is gone (deleted while its PIN was being changed).
    func replaceSealedSecondFactor(_ id: CredentialID, _ sealed: SealedSecondFactorKey) throws -> Bool {
        guard try store.setSealedSecondFactor(id, sealed) else { return false }
        contents.withLockedValue { contents in
            guard let index = contents.credentials.firstIndex(where: { $0.credential.id == id }) else { return }
            contents.credentials[index].credential.sealedSecondFactor = sealed
            contents.credentials[index].failedPinAttempts = 0
        }
        changed()
        return true
    }

    /// Claims the credential's PIN for one change; false when another change holds it. Two
    /// changes at once both unsealed the old key and both stored a new sealing: the one stored
    /// last won and the other's PIN, reported changed, did not work (issue #33).
    func beginPinChange(_ id: CredentialID) -> Bool {
        contents.withLockedValue { $0.pinChanges.insert(id).inserted }
    }

    func endPinChange(_ id: CredentialID) {
        _ = contents.withLockedValue { $0.pinChanges.remove(id) }
    }

    /// An administrator lifts a lock-out (`credentials.unlock`): as if the right PIN was given.
    /// A credential's priority, stored first; the caller notifies (`changed`).
    func setPriority(_ priority: Int, of id: CredentialID) throws {
        try store.setCredentialPriority(id, priority)
        contents.withLockedValue { contents in
            if let index = contents.credentials.firstIndex(where: { $0.credential.id == id }) {
                contents.credentials[index].priority = priority
            }
        }
    }

    func unlock(_ id: CredentialID) {
        pinSucceeded(id)
    }

    func isLockedOut(_ id: CredentialID) -> Bool {
        (credential(id)?.failedPinAttempts ?? 0) >= pinAttempts
    }

    private func persistPinAttempts(_ id: CredentialID, _ count: Int) {
        do {
            try store.setFailedPinAttempts(id, count)
        } catch {
            logger.error("cannot store the PIN attempt count", metadata: ["error": "\(error)"])
        }
        changed()
    }

    // MARK: Changes

    /// Stores a new credential and keeps what the store reads back: its key opened from the
    /// sealed row and self-tested, so a key that would not open after a restart is
    /// `keyUnavailable` now, not later.
    func insert(_ stored: StoredCredential) throws {
        try store.insertCredential(stored)
        let readBack = try store.credentials().first { $0.credential.id == stored.credential.id } ?? stored
        contents.withLockedValue { $0.credentials.append(readBack) }
        if readBack.keyProblem != nil { reportKeyProblems() }
    }

    func delete(_ id: CredentialID) throws {
        _ = try store.deleteCredential(id)
        contents.withLockedValue { contents in
            contents.credentials.removeAll { $0.credential.id == id }
            contents.items.removeAll { $0.credentialID == id }
        }
    }

    func setState(_ state: CredentialState, of id: CredentialID) {
        do {
            try store.setCredentialState(id, state)
        } catch {
            logger.error("cannot store a credential state", metadata: ["error": "\(error)"])
        }
        contents.withLockedValue { contents in
            guard let index = contents.credentials.firstIndex(where: { $0.credential.id == id }) else { return }
            contents.credentials[index].credential.state = state
        }
    }

    /// One page of item changes, stored atomically with its cursor.
    func applyItemPage(
        credential id: CredentialID, upserted: [StoredItem], removed: [String], cursor: String,
        withdrawnCertificates: Set<UInt64>? = nil
    ) throws {
        let now = Clocks.wall()
        try store.applyItemSync(
            credential: id, upserted: upserted, removed: removed, cursor: cursor,
            withdrawnCertificates: withdrawnCertificates, at: now)
        contents.withLockedValue { contents in
            guard let index = contents.credentials.firstIndex(where: { $0.credential.id == id }) else { return }
            contents.credentials[index].itemCursor = cursor
            contents.credentials[index].lastSyncAt = now
            if let withdrawnCertificates { contents.credentials[index].withdrawnCertificates = withdrawnCertificates }
        }
        // A sync that reached the site lifts the offline limit at once.
        if refreshOffline(now: now) { changed() }
    }

    /// Reads the items again after a sync changed them.
    func reloadItems() {
        do {
            let items = try store.items()
            contents.withLockedValue { $0.items = items }
            // New items' windows count at once (the caller notifies).
            _ = refreshOffline(now: Clocks.wall())
        } catch {
            logger.error("cannot read the items", metadata: ["error": "\(error)"])
        }
    }
}
