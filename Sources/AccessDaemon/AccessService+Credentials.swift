import AccessCore
import AccessStore
import ControlSocket
import Crypto
import Foundation
import Logging

/// Credentials on the service: registration with a site, deletion, the background sync of
/// state and items, and what the rest of the service derives from them (SDK state, which
/// readers may be approached).
extension AccessService {
    /// Recomputes everything that depends on the credentials held.
    func credentialsDidChange() {
        let aperioEnabled = configuration.features.contains("aperio")
        var availability = Credential.availability(of: credentials.map(\.credential))
        if aperioEnabled {
            for item in items where item.state == .active && item.aperioSecret != nil {
                if let tag = item.siteTag,
                   credentials.contains(where: { $0.credential.id == item.credentialID && $0.credential.state == .active }) {
                    availability.aperioSites.insert(tag)
                }
            }
        }
        let usable = credentials.filter(\.credential.isUsable)
        updateSdk {
            $0.usableCredentialCount = usable.count
            $0.credentialsMissingSecondFactor = usable.filter {
                $0.credential.secondFactorEnabled && $0.credential.sealedSecondFactor == nil
            }.count
            $0.secondFactorLockedOut = usable.contains { $0.failedPinAttempts >= configuration.pinAttempts }
        }
        if availability != controller.credentials {
            perform(controller.handle(.credentialsChanged(availability), at: Clocks.monotonic()))
        }
    }

    func renderCredential(_ stored: StoredCredential) -> JSONValue {
        let c = stored.credential
        let lockedOut = stored.failedPinAttempts >= configuration.pinAttempts
        return [
            "id": .string(c.id.description),
            "site": .string(c.siteTag.description),
            "siteName": .string(stored.siteName),
            "siteURL": .string(stored.siteURL),
            "cardholderName": .string(c.cardholderName),
            "deviceName": .string(stored.deviceName),
            "state": .string(c.state.rawValue),
            "secondFactor": [
                "required": .bool(c.secondFactorEnabled),
                "pinSet": .bool(c.sealedSecondFactor != nil),
                "lockedOut": .bool(lockedOut),
                "attemptsLeft": .int(Int64(max(0, configuration.pinAttempts - stored.failedPinAttempts))),
            ],
            "registeredAt": .double(stored.registeredAt),
            "lastSyncAt": stored.lastSyncAt.map { .double($0) } ?? .null,
            "itemCount": .int(Int64(items.filter { $0.credentialID == c.id }.count)),
        ]
    }

    // MARK: Registration

    func registerCredential(_ params: JSONValue, client: ControlClient) async -> Result<JSONValue, RPCError> {
        let address: SiteAddress
        let code: InvitationCode
        do {
            if let url = params["url"]?.string {
                (address, code) = try SiteAddress.parseInvitation(url)
            } else if let host = params["host"]?.string, let codeText = params["code"]?.string {
                address = try SiteAddress.parseHost(host)
                code = try InvitationCode(codeText)
            } else {
                return .failure(.invalidParams("give url, or host and code"))
            }
            try address.checkTransport()
        } catch {
            return .failure(.failed(error.code, error.description))
        }
        var pin: String?
        if let value = params["pin"], value != .null {
            guard let text = value.string else { return .failure(.invalidParams("pin must be a string of digits")) }
            do {
                try PIN.validate(text)
            } catch {
                return .failure(.invalidParams("pin must be \(PIN.allowedLengths.lowerBound) to \(PIN.allowedLengths.upperBound) digits"))
            }
            pin = text
        }
        var deviceName = configuration.deviceName ?? ProcessInfo.processInfo.hostName
        if let name = params["deviceName"]?.string {
            guard (1...128).contains(name.utf8.count) else { return .failure(.invalidParams("deviceName must be 1 to 128 bytes")) }
            deviceName = name
        }

        let credentialKey = P256.Signing.PrivateKey()
        let secondFactorKey = pin.map { _ in P256.Signing.PrivateKey() }
        let registration: SiteClient.Registration
        do {
            registration = try await site.register(site: address, code: code, deviceName: deviceName,
                                                   credentialKey: credentialKey.publicKey,
                                                   secondFactorKey: secondFactorKey?.publicKey)
        } catch {
            logger.warning("registration refused", metadata: ["site": "\(address)", "error": "\(error.code)"])
            if error.isTransient { setFeature("cloudConnection", ok: false, error: error.code) }
            return .failure(.failed(error.code, error.description))
        }
        var sealed: SealedSecondFactorKey?
        if let pin, let secondFactorKey {
            // scrypt takes a tenth of a second and 32 MiB: off the actor.
            let id = registration.credentialID
            let result = await Task.detached { () -> Result<SealedSecondFactorKey, SecondFactorError> in
                var generator = SystemRandomNumberGenerator()
                return Result { () throws(SecondFactorError) -> SealedSecondFactorKey in
                    try SealedSecondFactorKey.seal(secondFactorKey, pin: pin, credential: id, using: &generator)
                }
            }.value
            switch result {
            case let .success(value): sealed = value
            case let .failure(error): return .failure(.internalError("cannot seal the second-factor key: \(error)"))
            }
        }
        let credential = Credential(
            id: registration.credentialID, siteTag: registration.siteTag, cardholderName: registration.cardholderName,
            kind: .mobile, state: registration.state, sitePublicKey: registration.sitePublicKey,
            signingKey: credentialKey, sealedSecondFactor: sealed, secondFactorEnabled: registration.secondFactor)
        let stored = StoredCredential(credential: credential, siteName: registration.siteName,
                                      siteURL: address.description, deviceName: deviceName,
                                      registeredAt: Clocks.wall())
        do {
            try store.insertCredential(stored)
        } catch {
            // The site now holds a credential we could not keep: say so plainly.
            logger.error("registered but cannot store the credential", metadata: ["error": "\(error)"])
            return .failure(.internalError("registered with the site but cannot store the credential: \(error)"))
        }
        credentials.append(stored)
        logger.notice("credential registered", metadata: [
            "credential": "\(credential.id)", "site": "\(registration.siteName)", "uid": "\(client.uid)",
        ])
        setFeature("cloudConnection", ok: true, error: nil)
        emit("credentials.changed", ["reason": "registered", "id": .string(credential.id.description),
                                     "state": .string(credential.state.rawValue)])
        credentialsDidChange()
        // Items follow at once rather than at the next interval.
        sync.forceDue()
        return .success(renderCredential(stored))
    }

    // MARK: Deletion

    func deleteCredential(_ params: JSONValue, client: ControlClient) async -> Result<JSONValue, RPCError> {
        guard let text = params["id"]?.string else { return .failure(.invalidParams("id must be a credential id")) }
        let lowered = text.lowercased()
        let matches = credentials.filter { $0.credential.id.description.hasPrefix(lowered) }
        guard let stored = matches.first, matches.count == 1, !lowered.isEmpty else {
            return .failure(.failed("credential.unknown", matches.isEmpty ? "no credential \(text)" : "\(text) matches more than one credential"))
        }
        let id = stored.credential.id
        var siteInformed = false
        var siteError: String?
        do {
            try await site.delete(stored)
            siteInformed = true
        } catch {
            siteError = error.code
            logger.warning("the site was not told of the deletion", metadata: ["credential": "\(id)", "error": "\(error)"])
        }
        do {
            _ = try store.deleteCredential(id)
        } catch {
            return .failure(.internalError("cannot delete the credential: \(error)"))
        }
        credentials.removeAll { $0.credential.id == id }
        items.removeAll { $0.credentialID == id }
        logger.notice("credential deleted", metadata: ["credential": "\(id)", "siteInformed": "\(siteInformed)", "uid": "\(client.uid)"])
        emit("credentials.changed", ["reason": "deleted", "id": .string(id.description)])
        credentialsDidChange()
        var answer: [String: JSONValue] = ["id": .string(id.description), "deleted": true, "siteInformed": .bool(siteInformed)]
        if let siteError { answer["siteError"] = .string(siteError) }
        return .success(.object(answer))
    }

    // MARK: Sync

    func syncIfDue() async {
        guard !credentials.isEmpty, sync.isDue(at: Clocks.monotonic()) else { return }
        _ = await syncAll(reason: "scheduled")
    }

    /// Syncs every credential's state and items; one sync at a time: a caller arriving during
    /// one waits for its turn (the running sync hands over when it ends).
    func syncAll(reason: String) async -> JSONValue {
        if sync.inProgress {
            await withCheckedContinuation { syncTurns.append($0) }
        }
        sync.inProgress = true
        defer {
            if !syncTurns.isEmpty {
                sync.inProgress = true
                syncTurns.removeFirst().resume()
            }
        }
        var results: [JSONValue] = []
        var failure: SiteError?
        for id in credentials.map(\.credential.id) {
            do {
                results.append(try await syncOne(id))
            } catch {
                failure = failure ?? error
                results.append(["id": .string(id.description), "error": .string(error.code),
                                "message": .string(error.description)])
            }
        }
        let delay = sync.finished(success: failure == nil, interval: configuration.siteSyncInterval, at: Clocks.monotonic())
        if let failure {
            logger.warning("site sync failed", metadata: [
                "reason": "\(reason)", "error": "\(failure)", "retryInSeconds": "\(delay.components.seconds)",
            ])
            if failure.isTransient {
                setFeature("cloudConnection", ok: false, error: failure.code, retryIn: delay)
            } else {
                setFeature("itemSync", ok: false, error: failure.code, retryIn: delay)
            }
        } else if !results.isEmpty {
            setFeature("cloudConnection", ok: true, error: nil)
            setFeature("itemSync", ok: true, error: nil)
        }
        return ["credentials": .array(results), "nextSyncInSeconds": .int(delay.components.seconds)]
    }

    /// One credential: its state first (a revoked credential gets no items), then every
    /// page of item changes since its cursor, each page stored atomically with the cursor.
    private func syncOne(_ id: CredentialID) async throws(SiteError) -> JSONValue {
        guard let stored = credentials.first(where: { $0.credential.id == id }) else { return .null }
        var state = stored.credential.state
        do {
            let status = try await site.status(of: stored)
            state = status.state
        } catch let error where error.code == "credential.unknown" {
            // The site deleted it: it can never be used again.
            state = .revoked
        }
        if state != stored.credential.state { applyState(state, to: id) }
        guard state == .active else {
            return ["id": .string(id.description), "state": .string(state.rawValue), "added": 0, "updated": 0, "removed": 0]
        }
        var cursor = stored.itemCursor
        var added = 0, updated = 0, removed = 0
        while true {
            guard let current = credentials.first(where: { $0.credential.id == id }) else { break }
            let page = try await site.items(of: current, after: cursor)
            let known = Set(items.filter { $0.credentialID == id }.map(\.id))
            do {
                try store.applyItemSync(credential: id, upserted: page.items, removed: page.removed, cursor: page.cursor,
                                        at: Clocks.wall())
            } catch {
                throw .malformedAnswer("cannot store the items: \(error)")
            }
            for item in page.items { if known.contains(item.id) { updated += 1 } else { added += 1 } }
            removed += page.removed.filter(known.contains).count
            if let index = credentials.firstIndex(where: { $0.credential.id == id }) {
                credentials[index].itemCursor = page.cursor
                credentials[index].lastSyncAt = Clocks.wall()
            }
            cursor = page.cursor
            guard page.more else { break }
        }
        if added + updated + removed > 0 {
            items = (try? store.items()) ?? items
            emit("credentials.changed", ["reason": "items", "id": .string(id.description), "added": .int(Int64(added)),
                                         "updated": .int(Int64(updated)), "removed": .int(Int64(removed))])
            credentialsDidChange()
        }
        return ["id": .string(id.description), "state": .string(state.rawValue), "added": .int(Int64(added)),
                "updated": .int(Int64(updated)), "removed": .int(Int64(removed))]
    }

    private func applyState(_ state: CredentialState, to id: CredentialID) {
        do {
            try store.setCredentialState(id, state)
        } catch {
            logger.error("cannot store a credential state", metadata: ["error": "\(error)"])
        }
        guard let index = credentials.firstIndex(where: { $0.credential.id == id }) else { return }
        credentials[index].credential.state = state
        logger.notice("credential state changed by the site", metadata: ["credential": "\(id)", "state": "\(state.rawValue)"])
        emit("credentials.changed", ["reason": "state", "id": .string(id.description), "state": .string(state.rawValue)])
        credentialsDidChange()
    }

    /// Emits `feature.state` when a feature's state changes, and keeps the SDK state's list
    /// of features in error.
    func setFeature(_ feature: String, ok: Bool, error: String?, retryIn: Duration? = nil) {
        let state = FeatureState(ok: ok, error: error)
        guard featureStates[feature] != state else { return }
        featureStates[feature] = state
        var data: [String: JSONValue] = ["feature": .string(feature), "state": .string(ok ? "ok" : "failed")]
        if let error { data["error"] = .string(error) }
        if let retryIn { data["retryInSeconds"] = .int(retryIn.components.seconds) }
        emit("feature.state", .object(data))
        updateSdk {
            if ok { $0.featureSyncErrors.remove(feature) } else { $0.featureSyncErrors.insert(feature) }
        }
    }
}
