import AccessCore
import AccessStore
import ControlSocket
import Crypto

/// `credentials.setPin` and `credentials.unlock`: the second factor's life after registration.
/// Changing a PIN proves the old one first, charged as an attempt like any PIN at a door (a
/// way around the lock-out otherwise); setting one where none was set is not possible here: the
/// site knows no second-factor key for that credential (register again with a PIN).
extension CredentialAdmin {
    func setPin(_ params: SetPinParams, uid: UInt32) async -> Result<CredentialInfo, RPCError> {
        let stored: StoredCredential
        switch find(params.id) {
        case .success(let found): stored = found
        case .failure(let error): return .failure(error)
        }
        let id = stored.credential.id
        guard (try? PIN.validate(params.newPin)) != nil else {
            return .failure(
                .invalidParams(
                    "newPin must be \(PIN.allowedLengths.lowerBound) to \(PIN.allowedLengths.upperBound) digits"))
        }
        guard stored.credential.sealedSecondFactor != nil else {
            return .failure(
                .failed(
                    "secondFactor.notSet",
                    "credential \(id) has no PIN: the site knows no second-factor key "
                        + "for it, so one cannot be added here; register again with a PIN"))
        }
        // One change at a time per credential, refused before any attempt is charged.
        guard book.beginPinChange(id) else {
            return .failure(
                .failed(
                    "secondFactor.changeInProgress",
                    "another PIN change for credential \(id) is under way: try again when it has ended"))
        }
        defer { book.endPinChange(id) }
        let attempt: CredentialBook.ChargedAttempt
        do {
            attempt = try book.chargePinAttempt(id, pin: params.oldPin)
        } catch .lockedOut {
            return .failure(
                .failed(
                    "secondFactorLockedOut", "no PIN attempts left: an administrator can lift it (credentials.unlock)"))
        } catch {
            return .failure(
                .invalidParams(
                    "oldPin must be \(PIN.allowedLengths.lowerBound) to \(PIN.allowedLengths.upperBound) digits"))
        }
        // scrypt twice (a tenth of a second each), on the derivation thread.
        let key: P256.Signing.PrivateKey
        let (sealedOld, oldPin) = (attempt.sealed, params.oldPin)
        switch await keys.run({ () throws(SecondFactorError) in try sealedOld.unseal(pin: oldPin, credential: id) }) {
        case .success(let unsealed):
            key = unsealed
        case .failure(.notRun):
            return .failure(.failed("shuttingDown", "accessd is stopping"))
        case .failure(.failed):
            logger.warning(
                "PIN change refused: wrong PIN", metadata: ["credential": "\(id)", "by": "\(Self.origin(uid))"])
            return .failure(
                RPCError(
                    code: -32010, message: "wrong PIN",
                    data: [
                        "error": "secondFactor.wrongPin", "attemptsLeft": .int(Int64(attempt.attemptsLeftAfterCharge)),
                    ]))
        }
        let newPin = params.newPin
        let resealed = await keys.run { () throws -> SealedSecondFactorKey in
            var generator = SystemRandomNumberGenerator()
            return try SealedSecondFactorKey.seal(key, pin: newPin, credential: id, using: &generator)
        }
        do {
            switch resealed {
            case .success(let sealed):
                // Deleted while the PIN was being checked: said, not answered as changed.
                guard try book.replaceSealedSecondFactor(id, sealed) else {
                    return .failure(
                        .failed("credential.unknown", "credential \(id) was deleted while its PIN was being changed"))
                }
            case .failure(.notRun): return .failure(.failed("shuttingDown", "accessd is stopping"))
            case .failure(.failed(let error)): throw error
            }
        } catch {
            return .failure(.internalError("cannot store the new PIN: \(error)"))
        }
        logger.notice("PIN changed", metadata: ["credential": "\(id)", "by": "\(Self.origin(uid))"])
        journal.emit(CredentialsChangedEvent(reason: .pinChanged, credential: id.description))
        return .success(info(id) ?? Render.credential(stored, items: book.items, pinAttempts: book.pinAttempts))
    }

    func unlock(_ text: String, uid: UInt32) -> Result<CredentialInfo, RPCError> {
        let stored: StoredCredential
        switch find(text) {
        case .success(let found): stored = found
        case .failure(let error): return .failure(error)
        }
        let id = stored.credential.id
        guard book.isLockedOut(id) || stored.failedPinAttempts > 0 else {
            return .success(Render.credential(stored, items: book.items, pinAttempts: book.pinAttempts))
        }
        book.unlock(id)
        logger.notice(
            "second factor unlocked by an administrator",
            metadata: ["credential": "\(id)", "by": "\(Self.origin(uid))"])
        journal.emit(CredentialsChangedEvent(reason: .unlocked, credential: id.description))
        return .success(info(id) ?? Render.credential(stored, items: book.items, pinAttempts: book.pinAttempts))
    }

    private func info(_ id: CredentialID) -> CredentialInfo? {
        book.credential(id).map { Render.credential($0, items: book.items, pinAttempts: book.pinAttempts) }
    }
}
