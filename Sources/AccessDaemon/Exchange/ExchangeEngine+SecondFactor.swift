import AccessCore
import AccessJSON
import AccessStore
import ControlSocket
import Crypto

/// The second factor: a prompt (`secondFactor.required`) when the reader asks for it, and
/// `secondFactor.respond` with the PIN. An attempt is charged, persisted, before the slow key
/// derivation and refunded only when the PIN is right: PINs sent at once can never be
/// evaluated more often than attempts are left (docs/protocol.md).
extension ExchangeEngine {
    enum Charge: Sendable {
        case charged(ReaderID, run: UInt64, CredentialID, SealedSecondFactorKey, attemptsLeft: Int)
        case refused(RPCError)
    }

    /// Opens a prompt; returns the session's answer when there can be none (no PIN set,
    /// locked out).
    func promptSecondFactor(_ reader: ReaderID) -> CredentialSession.Input? {
        guard let run = runs[reader] else { return nil }
        // A person is typing now: the reader's second-factor timeout governs, not the manual
        // request's (which is meant for connecting and deciding).
        reports.yield(.secondFactorPrompted(run.origin))
        nextID += 1
        let request = "sf-\(nextID)"
        runs[reader]?.secondFactorRequest = request
        guard let stored = book.credential(run.credential), stored.credential.sealedSecondFactor != nil else {
            return .secondFactorUnavailable(.secondFactorRequired)
        }
        if stored.failedPinAttempts >= book.pinAttempts { return .secondFactorUnavailable(.secondFactorLockedOut) }
        runs[reader]?.secondFactorOpenedAt = ContinuousClock.now
        journal.emit(
            SecondFactorRequiredEvent(
                request: request, reader: reader.description, credential: run.credential.description,
                prompt: promptText(run, stored), attemptsLeft: book.pinAttempts - stored.failedPinAttempts,
                timeoutSeconds: Int(settings.secondFactorTimeout.components.seconds)))
        return nil
    }

    /// `secondFactor.list`: the prompts open now (a client that connects late finds them here).
    func openPrompts() -> [PromptInfo] {
        runs.values.compactMap { run -> (ContinuousClock.Instant, PromptInfo)? in
            guard let request = run.secondFactorRequest, let opened = run.secondFactorOpenedAt,
                let stored = book.credential(run.credential)
            else { return nil }
            let left = settings.secondFactorTimeout - (ContinuousClock.now - opened)
            return (
                opened,
                PromptInfo(
                    request: request, reader: run.session.readerID.description,
                    credential: run.credential.description, prompt: promptText(run, stored),
                    attemptsLeft: max(0, book.pinAttempts - stored.failedPinAttempts),
                    secondsLeft: max(0, left.components.seconds))
            )
        }.sorted { $0.0 < $1.0 }.map(\.1)
    }

    private func promptText(_ run: ExchangeRun, _ stored: StoredCredential) -> String {
        PromptText.render(
            settings.secondFactorPrompt, readerName: run.readerName,
            readerID: run.session.readerID.description, siteName: stored.siteName)
    }

    /// `secondFactor.cancel {request}`: the person declines. The reader is told the second
    /// factor failed and the exchange ends `userCancelled`; no attempt is spent.
    func cancel(request: String) -> Result<CancelAnswer, RPCError> {
        guard let (reader, _) = runs.first(where: { $0.value.secondFactorRequest == request }) else {
            return .failure(.failed("secondFactor.noSuchRequest", "no second-factor prompt \(request) is open"))
        }
        runs[reader]?.secondFactorRequest = nil
        logger.notice("second-factor prompt cancelled", metadata: ["reader": "\(reader)", "request": "\(request)"])
        if let credential = runs[reader]?.credential {
            answered(request, reader: reader, credential: credential, result: .cancelled, attemptsLeft: nil)
        }
        feed(reader, .secondFactorUnavailable(.userCancelled))
        return .success(CancelAnswer(request: request, cancelled: true))
    }

    /// `secondFactor.respond {request, pin}`. The key derivation runs on the derivation
    /// thread (`KeyDerivation`), never on the engine nor the cooperative pool.
    nonisolated func respond(request: String, pin: String) async -> Result<PinAnswer, RPCError> {
        switch await charge(request: request, pin: pin) {
        case .refused(let error):
            return .failure(error)
        case .charged(let reader, let run, let credential, let sealed, let attemptsLeft):
            let derived = await keys.run { () throws(SecondFactorError) -> P256.Signing.PrivateKey in
                try sealed.unseal(pin: pin, credential: credential)
            }
            let result: Result<P256.Signing.PrivateKey, SecondFactorError>
            switch derived {
            case .success(let key): result = .success(key)
            case .failure(.failed(let error)): result = .failure(error)
            case .failure(.notRun):
                // accessd is stopping, or the caller left before its turn: the attempt stays
                // charged (never checked, so it told nobody anything).
                return .failure(.failed("shuttingDown", "accessd is stopping"))
            }
            return await evaluated(
                request: request, reader: reader, run: run, credential: credential, result,
                attemptsLeft: attemptsLeft)
        }
    }

    private func charge(request: String, pin: String) -> Charge {
        guard let (reader, run) = runs.first(where: { $0.value.secondFactorRequest == request }) else {
            return .refused(.failed("secondFactor.noSuchRequest", "no second-factor prompt \(request) is open"))
        }
        do {
            let attempt = try book.chargePinAttempt(run.credential, pin: pin)
            return .charged(
                reader, run: run.id, run.credential, attempt.sealed, attemptsLeft: attempt.attemptsLeftAfterCharge)
        } catch .invalidPINFormat {
            return .refused(
                .invalidParams(
                    "pin must be \(PIN.allowedLengths.lowerBound) to \(PIN.allowedLengths.upperBound) digits"))
        } catch .lockedOut {
            // Other PINs still being checked used the last attempts: this one is not tried.
            return .refused(.failed("secondFactorLockedOut", "no PIN attempts left; the second factor is locked"))
        } catch {
            return .refused(
                .failed("secondFactor.noSuchRequest", "the credential of prompt \(request) has no second factor"))
        }
    }

    private func evaluated(
        request: String, reader: ReaderID, run: UInt64, credential: CredentialID,
        _ result: Result<P256.Signing.PrivateKey, SecondFactorError>,
        attemptsLeft: Int
    ) -> Result<PinAnswer, RPCError> {
        let promptOpen = runs[reader]?.id == run && runs[reader]?.secondFactorRequest == request
        switch result {
        case .success(let key):
            book.pinSucceeded(credential)
            answered(request, reader: reader, credential: credential, result: .accepted, attemptsLeft: book.pinAttempts)
            guard promptOpen else {
                return .failure(
                    .failed("secondFactor.noSuchRequest", "prompt \(request) ended before the PIN was checked"))
            }
            runs[reader]?.secondFactorRequest = nil
            feed(reader, .secondFactorKey(key))
            return .success(PinAnswer(request: request, accepted: true))
        case .failure(.wrongPIN) where attemptsLeft == 0:
            logger.warning("second factor locked after wrong PINs", metadata: ["credential": "\(credential)"])
            answered(request, reader: reader, credential: credential, result: .lockedOut, attemptsLeft: 0)
            if promptOpen {
                runs[reader]?.secondFactorRequest = nil
                feed(reader, .secondFactorUnavailable(.secondFactorLockedOut))
            }
            return .failure(.failed("secondFactorLockedOut", "wrong PIN; the second factor is now locked"))
        case .failure(.wrongPIN):
            let failed = book.credential(credential)?.failedPinAttempts ?? book.pinAttempts
            answered(
                request, reader: reader, credential: credential, result: .wrongPin,
                attemptsLeft: max(0, book.pinAttempts - failed))
            return .failure(
                RPCError(
                    code: -32010, message: "wrong PIN",
                    data: [
                        "error": "secondFactor.wrongPin",
                        "attemptsLeft": .int(Int64(max(0, book.pinAttempts - failed))),
                    ]))
        case .failure(let error):
            return .failure(.invalidParams("pin: \(error)"))
        }
    }

    /// `secondFactor.answered`: what became of a PIN (or of the prompt), for the audit trail
    /// the site receives (docs/site-api.md §4.5); the PIN itself is never in it.
    private func answered(
        _ request: String, reader: ReaderID, credential: CredentialID,
        result: SecondFactorAnsweredEvent.Result, attemptsLeft: Int?
    ) {
        journal.emit(
            SecondFactorAnsweredEvent(
                request: request, reader: reader.description, credential: credential.description,
                result: result, attemptsLeft: attemptsLeft))
    }
}
