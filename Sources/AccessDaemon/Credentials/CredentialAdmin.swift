import AccessCore
import AccessStore
import ControlSocket
import Crypto
import Foundation
import Logging

/// `credentials.register` and `credentials.delete`: talking to the site, then keeping or
/// dropping the credential. Holds no state of its own: the book is the truth.
struct CredentialAdmin: Sendable {
    let site: SiteClient
    let book: CredentialBook
    let journal: EventJournal
    let sync: SiteSync
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
                return .failure(.invalidParams("pin must be \(PIN.allowedLengths.lowerBound) to \(PIN.allowedLengths.upperBound) digits"))
            }
            pin = text
        }
        var deviceName = self.deviceName ?? ProcessInfo.processInfo.hostName
        if let name = params.deviceName {
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
            if error.isTransient { await sync.setFeature("cloudConnection", ok: false, error: error.code) }
            return .failure(.failed(error.code, error.description))
        }
        var sealed: SealedSecondFactorKey?
        if let pin, let secondFactorKey {
            // scrypt takes a tenth of a second and 32 MiB: on this request's task.
            var generator = SystemRandomNumberGenerator()
            do {
                sealed = try SealedSecondFactorKey.seal(secondFactorKey, pin: pin, credential: registration.credentialID,
                                                        using: &generator)
            } catch {
                return .failure(.internalError("cannot seal the second-factor key: \(error)"))
            }
        }
        let credential = Credential(
            id: registration.credentialID, siteTag: registration.siteTag, cardholderName: registration.cardholderName,
            kind: .mobile, state: registration.state, sitePublicKey: registration.sitePublicKey,
            signingKey: credentialKey, sealedSecondFactor: sealed, secondFactorEnabled: registration.secondFactor)
        let stored = StoredCredential(credential: credential, siteName: registration.siteName,
                                      siteURL: address.description, deviceName: deviceName, registeredAt: Clocks.wall())
        do {
            try book.insert(stored)
        } catch {
            // The site now holds a credential we could not keep: say so plainly.
            logger.error("registered but cannot store the credential", metadata: ["error": "\(error)"])
            return .failure(.internalError("registered with the site but cannot store the credential: \(error)"))
        }
        logger.notice("credential registered", metadata: [
            "credential": "\(credential.id)", "site": "\(registration.siteName)", "uid": "\(uid)",
        ])
        await sync.setFeature("cloudConnection", ok: true, error: nil)
        journal.emit("credentials.changed", ["reason": "registered", "id": .string(credential.id.description),
                                             "state": .string(credential.state.rawValue)])
        book.changed()
        // Items follow at once rather than at the next interval.
        await sync.syncSoon()
        return .success(Render.credential(stored, items: book.items, pinAttempts: book.pinAttempts))
    }

    /// The one credential whose id starts with `text`.
    func find(_ text: String) -> Result<StoredCredential, RPCError> {
        let lowered = text.lowercased()
        let matches = book.credentials.filter { $0.credential.id.description.hasPrefix(lowered) }
        guard let stored = matches.first, matches.count == 1, !lowered.isEmpty else {
            return .failure(.failed("credential.unknown", matches.isEmpty ? "no credential \(text)" : "\(text) matches more than one credential"))
        }
        return .success(stored)
    }

    func delete(_ text: String, option: DeleteOption = .default, uid: UInt32) async -> Result<DeleteAnswer, RPCError> {
        let stored: StoredCredential
        switch find(text) {
        case let .success(found): stored = found
        case let .failure(error): return .failure(error)
        }
        let id = stored.credential.id
        var siteError: String?
        if option != .offlineOnly {
            do {
                try await site.delete(stored)
            } catch {
                logger.warning("the site was not told of the deletion", metadata: ["credential": "\(id)", "error": "\(error)"])
                // The SDK's default keeps the credential when the site cannot be told: deleting
                // it here alone would leave a live credential at the site nobody holds.
                guard option == .allowOffline else {
                    return .failure(.failed(error.code, "not deleted: \(error.description); to delete it here anyway "
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
        logger.notice("credential deleted", metadata: ["credential": "\(id)", "siteInformed": "\(siteError == nil)", "uid": "\(uid)"])
        journal.emit("credentials.changed", ["reason": "deleted", "id": .string(id.description)])
        book.changed()
        return .success(DeleteAnswer(id: id.description, siteError: siteError))
    }
}
