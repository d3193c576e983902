import AccessCore
import AccessStore
import ControlSocket
import Crypto
import FoundationEssentials
import Logging

/// `credentials.register` and `credentials.delete`: talking to the site, then keeping or
/// dropping the credential. Holds no state of its own: the book is the truth.
struct CredentialAdmin: Sendable {
    let site: SiteClient
    let book: CredentialBook
    let journal: EventJournal
    let sync: SiteSync
    /// Where PINs are sealed and checked (scrypt), off the cooperative pool.
    let keys: KeyDerivation
    let deviceName: String?
    let logger: Logger

    func register(_ params: RegisterParams, uid: UInt32) async -> Result<CredentialInfo, RPCError> {
        let address: SiteAddress
        let code: InvitationCode
        do {
            if let url = params.url {
                (address, code) = try SiteAddress.parseInvitation(url)
            } else if let host = params.host, let codeText = params.code {
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
        if let text = params.pin {
            do {
                try PIN.validate(text)
            } catch {
                return .failure(
                    .invalidParams(
                        "pin must be \(PIN.allowedLengths.lowerBound) to \(PIN.allowedLengths.upperBound) digits"))
            }
            pin = text
        }
        // One credential per site: a second one for the same site would be presented in its
        // place at random. Checked before the site is asked, so the invitation stays unused.
        let replace = params.replace ?? false
        if !replace,
            let held = book.credentials.first(where: {
                $0.credential.kind == .mobile && $0.siteURL == address.description
            })
        {
            return .failure(Self.alreadyHeld(held))
        }
        var deviceName = self.deviceName ?? ProcessInfo.processInfo.hostName
        if let name = params.deviceName {
            guard (1...128).contains(name.utf8.count) else {
                return .failure(.invalidParams("deviceName must be 1 to 128 bytes"))
            }
            deviceName = name
        }

        // Without a data key the new key could only be kept in clear: refused before the site
        // issues a credential nobody could keep.
        if let reason = book.store.secretsUnstorable {
            return .failure(
                .failed(
                    "dataKeyUnavailable",
                    "no data key to seal the credential's key with (\(reason)): see docs/operations.md, \"Secrets at rest\""
                ))
        }
        let credentialKey = P256.Signing.PrivateKey()
        let secondFactorKey = pin.map { _ in P256.Signing.PrivateKey() }
        let registration: SiteClient.Registration
        do {
            registration = try await site.register(
                site: address, code: code, deviceName: deviceName,
                credentialKey: credentialKey.publicKey,
                secondFactorKey: secondFactorKey?.publicKey)
        } catch {
            // The caller gets the reason; the feature states are the sites accessd holds
            // credentials with (a mistyped URL marked the healthy site failing: issue #35).
            logger.warning("registration refused", metadata: ["site": "\(address)", "error": "\(error.code)"])
            return .failure(.failed(error.code, error.description))
        }
        var sealed: SealedSecondFactorKey?
        if let pin, let secondFactorKey {
            // scrypt takes a tenth of a second and 32 MiB: on the derivation thread.
            let credentialID = registration.credentialID
            switch await keys.run({ () throws -> SealedSecondFactorKey in
                var generator = SystemRandomNumberGenerator()
                return try SealedSecondFactorKey.seal(
                    secondFactorKey, pin: pin, credential: credentialID, using: &generator)
            }) {
            case .success(let key): sealed = key
            case .failure(.notRun): return .failure(.failed("shuttingDown", "accessd is stopping"))
            case .failure(.failed(let error)):
                return .failure(.internalError("cannot seal the second-factor key: \(error)"))
            }
        }
        let credential = Credential(
            id: registration.credentialID, siteTag: registration.siteTag, cardholderName: registration.cardholderName,
            kind: .mobile, state: registration.state, sitePublicKey: registration.sitePublicKey,
            signingKey: credentialKey, sealedSecondFactor: sealed, secondFactorEnabled: registration.secondFactor)
        let stored = StoredCredential(
            credential: credential, siteName: registration.siteName,
            siteURL: address.description, deviceName: deviceName, registeredAt: Clocks.wall())
        // The same site: by its address, or under another address, known only now from its tag.
        let sameSite = book.credentials.filter {
            $0.credential.kind == .mobile
                && ($0.credential.siteTag == registration.siteTag || $0.siteURL == address.description)
        }
        if !replace, let held = sameSite.first {
            // The site issued a credential nobody will hold: tell it, as a delete would.
            try? await site.delete(stored)
            return .failure(Self.alreadyHeld(held))
        }
        do {
            try book.insert(stored)
        } catch {
            // The site now holds a credential we could not keep: say so plainly.
            logger.error("registered but cannot store the credential", metadata: ["error": "\(error)"])
            return .failure(.internalError("registered with the site but cannot store the credential: \(error)"))
        }
        logger.notice(
            "credential registered",
            metadata: [
                "credential": "\(credential.id)", "site": "\(registration.siteName)", "by": "\(Self.origin(uid))",
            ])
        journal.emit(
            CredentialsChangedEvent(
                reason: .registered, credential: credential.id.description,
                state: credential.state.rawValue,
                fingerprint: credential.signingKey.map { KeyFingerprint.of($0.publicKey) }))
        for old in sameSite where old.credential.id != credential.id {
            await replaced(old, by: credential.id, uid: uid)
        }
        book.changed()
        // Items follow at once rather than at the next interval.
        await sync.syncSoon(for: credential.id)
        return .success(Render.credential(stored, items: book.items, pinAttempts: book.pinAttempts))
    }

    /// The uid an administrator's action is journalled under when it did not come over the
    /// socket: the MQTT command topic's (`ControlClient.outsideTheSocket`) and the invitation
    /// file's.
    static let invitationFileUID = UInt32.max - 1

    /// Who did it, for the journal: `uid 1000`, `mqtt` (the command topic: the broker's ACL
    /// says which certificates may publish there) or `invitation file`.
    static func origin(_ uid: UInt32) -> String {
        switch uid {
        case UInt32.max: "mqtt"
        case invitationFileUID: "invitation file"
        default: "uid \(uid)"
        }
    }

    static func alreadyHeld(_ held: StoredCredential) -> RPCError {
        .failed(
            "credential.exists",
            "credential \(held.credential.id) is held for \(held.siteName) (\(held.siteURL)): one per site; "
                + "to replace it, register with replace (accessctl credentials register --replace)")
    }

    /// The credential a registration with `replace` took over from: the site told (when it can),
    /// deleted here.
    private func replaced(_ old: StoredCredential, by new: CredentialID, uid: UInt32) async {
        do {
            try await site.delete(old)
        } catch {
            logger.warning(
                "the site was not told of the replaced credential",
                metadata: [
                    "credential": "\(old.credential.id)",
                    "error": "\(error.code)",
                ])
        }
        do {
            try book.delete(old.credential.id)
        } catch {
            logger.error(
                "cannot delete the replaced credential",
                metadata: ["credential": "\(old.credential.id)", "error": "\(error)"])
            return
        }
        logger.notice(
            "credential replaced",
            metadata: ["credential": "\(old.credential.id)", "replacedBy": "\(new)", "by": "\(Self.origin(uid))"])
        journal.emit(
            CredentialsChangedEvent(
                reason: .deleted, credential: old.credential.id.description,
                replacedBy: new.description))
        book.changed()
    }

    /// The one credential whose id starts with `text`.
    func find(_ text: String) -> Result<StoredCredential, RPCError> {
        let lowered = text.lowercased()
        guard !lowered.isEmpty else {
            return .failure(.invalidParams("id must be a credential's id or its first characters, not empty"))
        }
        let matches = book.credentials.filter { $0.credential.id.description.hasPrefix(lowered) }
        guard let stored = matches.first, matches.count == 1 else {
            return .failure(
                .failed(
                    "credential.unknown",
                    matches.isEmpty ? "no credential \(text)" : "\(text) matches more than one credential"))
        }
        return .success(stored)
    }

    func delete(_ text: String, option: DeleteOption = .default, uid: UInt32) async -> Result<DeleteAnswer, RPCError> {
        let stored: StoredCredential
        switch find(text) {
        case .success(let found): stored = found
        case .failure(let error): return .failure(error)
        }
        let id = stored.credential.id
        var siteError: String?
        if option != .offlineOnly {
            do {
                try await site.delete(stored)
            } catch {
                logger.warning(
                    "the site was not told of the deletion", metadata: ["credential": "\(id)", "error": "\(error)"])
                // The SDK's default keeps the credential when the site cannot be told: deleting
                // it here alone would leave a live credential at the site nobody holds.
                guard option == .allowOffline else {
                    return .failure(
                        .failed(
                            error.code,
                            "not deleted: \(error.description); to delete it here anyway "
                                + "(the site keeps it until its administrator revokes it): option allowOffline"))
                }
                siteError = error.code
            }
        } else {
            siteError = "notAsked"
        }
        do {
            try book.delete(id)
        } catch {
            return .failure(.internalError("cannot delete the credential: \(error)"))
        }
        logger.notice(
            "credential deleted",
            metadata: ["credential": "\(id)", "siteInformed": "\(siteError == nil)", "by": "\(Self.origin(uid))"])
        journal.emit(CredentialsChangedEvent(reason: .deleted, credential: id.description))
        book.changed()
        return .success(DeleteAnswer(id: id.description, siteError: siteError))
    }
}
