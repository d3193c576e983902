import AccessCore
import AccessJSON
import AccessStore
import ControlSocket
import FoundationEssentials
import Logging

/// What each method of the control socket does, over the daemon's services, in the types of
/// the shared contract (`ControlCalls`): params decoded, answers encoded, once, here.
extension AccessDaemonServices {
    func makeHandlers() -> [ControlMethod: ControlAPI.Handler] {
        var table = HandlerTable()
        table.on(ControlCalls.StatusGet.self) { _, _ in .success(await self.status()) }
        table.on(ControlCalls.ReadersList.self) { _, _ in
            .success(ReadersAnswer(readers: await self.access.readers.map(Render.reader)))
        }
        table.on(ControlCalls.ReadersGetScope.self) { _, _ in .success(ReaderScopeCalls.answer(await self.access.scope))
        }
        table.on(ControlCalls.ReadersSetScope.self) { params, client in
            do throws(RPCError) {
                let (id, rule) = try ReaderScopeCalls.rule(from: params)
                return await self.changeScope(id, rule, client: client)
            } catch {
                return .failure(error)
            }
        }
        table.on(ControlCalls.ReadersResetScope.self) { params, client in
            guard let text = params.reader else { return await self.changeScope(nil, nil, client: client) }
            guard let id = ReaderID(text) else {
                return .failure(.invalidParams("reader must be a reader id (up to eight hex digits)"))
            }
            return await self.changeScope(id, nil, client: client)
        }
        table.on(ControlCalls.ReadersProbe.self) { params, client in
            guard let reader = ReaderID(params.reader) else {
                return .failure(.invalidParams("reader must be a reader id (up to eight hex digits)"))
            }
            let seconds = params.seconds ?? 10
            guard seconds.isFinite, AccessEngine.probeSeconds.contains(seconds) else {
                return .failure(.invalidParams("seconds is 1 to 60"))
            }
            guard let probe = await self.access.startProbe(reader) else {
                return .failure(
                    .failed(
                        "readers.probeBusy", "\(AccessEngine.probeLimit) probes are running; try again when one ends"))
            }
            // A probe is its caller's: one whose connection closed frees its slot at once
            // (issue #33: four abandoned 60 s probes kept field engineers out for a minute).
            let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
            while ContinuousClock.now < deadline, !client.hasHungUp, !Task.isCancelled {
                try? await Task.sleep(for: min(.milliseconds(200), deadline - ContinuousClock.now))
            }
            guard let answer = await self.access.finishProbe(probe, seconds: seconds) else {
                return .failure(.failed("readers.probeBusy", "the probe was lost"))
            }
            return .success(answer)
        }
        table.on(ControlCalls.EventsSubscribe.self) { params, client in self.subscribe(client, params) }
        table.on(ControlCalls.EventsUnsubscribe.self) { _, client in
            .success(UnsubscribeAnswer(wasSubscribed: self.journal.unsubscribe(client)))
        }
        table.on(ControlCalls.ScanningSet.self) { params, client in
            await self.toggle(params.enabled, client: client, setting: .scanning) {
                await self.discovery.setScanning($0)
            }
            .map { ScanningAnswer(scanningEnabled: $0) }
        }
        table.on(ControlCalls.AutomaticAccessSet.self) { params, client in
            await self.toggle(params.enabled, client: client, setting: .automaticAccess) {
                await self.access.setAutomaticAccess($0)
            }
            .map { AutomaticAccessAnswer(automaticAccessEnabled: $0) }
        }
        table.on(ControlCalls.LogSetLevel.self) { params, client in self.setLogLevel(params.level, client: client) }
        table.on(ControlCalls.AccessRequest.self) { params, client in
            await self.manual(params.reader, .success(.access), client: client, credential: params.credential)
        }
        table.on(ControlCalls.AccessNext.self) { params, client in
            var expiry: Duration?
            if let seconds = params.expiry {
                let bounds =
                    Double(AccessEngine.openNextExpiry.lowerBound)...Double(AccessEngine.openNextExpiry.upperBound)
                guard seconds.isFinite, bounds.contains(seconds) else {
                    return .failure(.invalidParams("expiry is 1 to 60 seconds"))
                }
                expiry = .milliseconds(Int64((seconds * 1000).rounded()))
            }
            let used = await self.access.openNext(expiry: expiry, openedBy: "socket", uid: client.uid)
            let seconds = Double(used.components.seconds) + Double(used.components.attoseconds) / 1e18
            return .success(
                OpenNextAnswer(expirySeconds: Int(seconds.rounded()), until: Date().timeIntervalSince1970 + seconds))
        }
        table.on(ControlCalls.AccessCancel.self) { _, _ in
            .success(OpenNextCancelAnswer(cancelled: await self.access.cancelOpenNext()))
        }
        table.on(ControlCalls.ActionsList.self) { params, client in
            await self.manual(params.reader, .success(.enumerateActions), client: client, credential: params.credential)
        }
        table.on(ControlCalls.ActionsPerform.self) { params, client in
            let action = Int8(exactly: params.action).map(ExchangeOperation.performAction)
            return await self.manual(
                params.reader,
                action.map { .success($0) }
                    ?? .failure(.invalidParams("action must be an action id from actions.list")), client: client)
        }
        table.on(ControlCalls.SecondFactorRespond.self) { params, _ in
            await self.exchanges.respond(request: params.request, pin: params.pin)
        }
        table.on(ControlCalls.SecondFactorCancel.self) { params, _ in
            await self.exchanges.cancel(request: params.request)
        }
        table.on(ControlCalls.SecondFactorList.self) { _, _ in
            .success(PromptsAnswer(prompts: await self.exchanges.openPrompts()))
        }
        table.on(ControlCalls.DiagnosticsCollect.self) { _, _ in await self.diagnostics.collect() }
        table.on(ControlCalls.CredentialsRegister.self) { params, client in
            await self.admin.register(params, uid: client.uid)
        }
        table.on(ControlCalls.CredentialsList.self) { _, _ in
            let items = self.book.items
            return .success(
                CredentialsAnswer(
                    credentials: self.book.credentials.map {
                        Render.credential($0, items: items, pinAttempts: self.book.pinAttempts)
                    }))
        }
        table.on(ControlCalls.CredentialsDelete.self) { params, client in
            await self.admin.delete(params.id, option: params.option ?? .default, uid: client.uid)
        }
        table.on(ControlCalls.CredentialsSetPin.self) { params, client in
            await self.admin.setPin(params, uid: client.uid)
        }
        table.on(ControlCalls.CredentialsSetPriority.self) { params, client in
            self.admin.setPriority(params, uid: client.uid)
        }
        table.on(ControlCalls.CredentialsUnlock.self) { params, client in self.admin.unlock(params.id, uid: client.uid)
        }
        table.on(ControlCalls.ItemsSync.self) { _, _ in await self.sync.syncNow(reason: "requested") }
        table.on(ControlCalls.ItemsList.self) { _, _ in .success(ItemsAnswer(items: self.book.items.map(Render.item))) }
        return table.handlers
    }

    private func status() async -> StatusAnswer {
        let state = sdk.current
        let inputs = sdk.inputs
        let engine = await access.status
        let (scanningEnabled, adapter, radio) = await discovery.scanningAndAdapter
        return StatusAnswer(
            version: AccessDaemon.version, protocolVersion: ControlProtocol.version, isScanning: state.isScanning,
            states: state.states.map(\.rawValue), featureErrors: state.featureSyncErrors,
            scanningEnabled: scanningEnabled, automaticAccessEnabled: engine.automaticAccessEnabled, adapter: adapter,
            bluetoothServicePresent: inputs.bluetoothServicePresent, readerCount: engine.readerCount,
            credentialCount: book.credentials.count, usableCredentialCount: inputs.usableCredentialCount,
            refusedAdvertisements: engine.refusedAdvertisements, lastSequence: journal.lastSequence,
            uptimeSeconds: Int64((Clocks.monotonic() - startedAt).components.seconds),
            logLevel: settings.logLevel.current.rawValue, configFile: configFile, configuredAdapter: configuredAdapter,
            scanningSetBy: setBy(.scanning), automaticAccessSetBy: setBy(.automaticAccess), audit: audit.status,
            mqtt: mqtt?.status, secrets: book.secretsStatus, radio: radio, enrolment: enrolment.status,
            package: await InstalledPackage.version())
    }

    /// `operator` when a client's saved switch is in force, `configuration` otherwise.
    private func setBy(_ setting: RuntimeSettings.Switch) -> String {
        ((try? settings.saved(setting)) ?? nil) != nil ? "operator" : "configuration"
    }

    private func subscribe(_ client: ControlClient, _ params: SubscribeParams) -> Result<SubscribeAnswer, RPCError> {
        if let since = params.since, since < 0 {
            return .failure(.invalidParams("since must be a sequence number ≥ 0"))
        }
        if params.since != nil && params.sinceTime != nil {
            return .failure(.invalidParams("since and sinceTime exclude each other"))
        }
        if let time = params.sinceTime, !time.isFinite || time < 0 {
            return .failure(.invalidParams("sinceTime must be seconds since the epoch"))
        }
        if let unknown = params.kinds.map(EventKind.unknown(among:)), let first = unknown.first {
            return .failure(.invalidParams("kinds: no event kind \"\(first.prefix(64))\" (kinds: \(EventKind.list))"))
        }
        do {
            let since = try params.sinceTime.map(journal.sequence(before:)) ?? params.since
            let subscription = try journal.subscribe(client, kinds: params.kinds.map(Set.init), since: since)
            // Events older than the journal keeps cannot be replayed: say from where it starts.
            return .success(
                SubscribeAnswer(
                    subscribed: true, replayed: subscription.replayed,
                    lastSequence: subscription.lastSequence,
                    oldestAvailable: subscription.oldestAvailable, since: since))
        } catch {
            return .failure(.internalError("cannot read the journal: \(error)"))
        }
    }

    /// An operator's on/off setting: saved (it outlives restarts), then applied.
    private func toggle(
        _ enabled: Bool, client: ControlClient, setting: RuntimeSettings.Switch,
        apply: (Bool) async -> Void
    ) async -> Result<Bool, RPCError> {
        do {
            try settings.save(setting, enabled)
        } catch {
            return .failure(.internalError("cannot save the setting: \(error)"))
        }
        logger.notice(
            "\(setting.rawValue) \(enabled ? "enabled" : "disabled") by a client", metadata: ["uid": "\(client.uid)"])
        await apply(enabled)
        return .success(enabled)
    }

    /// `readers.setScope` and `readers.resetScope`: saved, applied, journalled with who did it.
    private func changeScope(_ id: ReaderID?, _ rule: ReaderScope.Rule?, client: ControlClient) async -> Result<
        ReaderScopeAnswer, RPCError
    > {
        do {
            let scope = try await access.changeScope(id, rule) { try settings.saveReaderRules($0) }
            let info = id.flatMap { id in rule.map { ReaderScopeCalls.info(id, $0, from: .operator) } }
            journal.emit(ReadersScopeChangedEvent(reader: id?.description, rule: info, uid: Int(client.uid)))
            logger.notice(
                rule == nil ? "reader scope reset by a client" : "reader scope set by a client",
                metadata: ["reader": "\(id.map(\.description) ?? "all")", "uid": "\(client.uid)"])
            return .success(ReaderScopeCalls.answer(scope))
        } catch let error as ReaderScopeError {
            return .failure(.invalidParams(error.message))
        } catch {
            return .failure(.internalError("cannot save the reader scope: \(error)"))
        }
    }

    private func setLogLevel(_ name: String, client: ControlClient) -> Result<LogLevelParams, RPCError> {
        guard let level = Logger.Level(rawValue: name) else {
            return .failure(
                .invalidParams("level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))"))
        }
        settings.logLevel.set(level)
        logger.notice("log level set by a client", metadata: ["level": "\(name)", "uid": "\(client.uid)"])
        return .success(LogLevelParams(level: name))
    }

    /// `access.request`, `actions.list`, `actions.perform`.
    private func manual(
        _ text: String, _ operation: Result<ExchangeOperation, RPCError>,
        client: ControlClient, credential: String? = nil
    ) async -> Result<ExchangeAnswer, RPCError> {
        guard let reader = ReaderID(text) else {
            return .failure(.invalidParams("reader must be a reader id (up to eight hex digits)"))
        }
        var chosen: CredentialID?
        if let credential {
            switch await credentialFor(reader, credential) {
            case .success(let id): chosen = id
            case .failure(let error): return .failure(error)
            }
        }
        switch operation {
        case .success(let exchangeOperation):
            return await access.request(reader, exchangeOperation, uid: client.uid, credential: chosen)
        case .failure(let error): return .failure(error)
        }
    }

    /// `access.request {credential}`: the credential named, if it can be presented to the
    /// reader (its site's, or for an Aperio lock one holding the lock's item). A reader not
    /// heard is left to the request's own refusal (`readerNotHeard`, with what is heard).
    private func credentialFor(_ reader: ReaderID, _ text: String) async -> Result<CredentialID, RPCError> {
        let stored: StoredCredential
        switch admin.find(text) {
        case .success(let found): stored = found
        case .failure(let error): return .failure(error)
        }
        let id = stored.credential.id
        guard let attributes = await access.reader(reader) else { return .success(id) }
        guard book.presentation(for: attributes, aperioEnabled: aperioEnabled, only: id) == nil else {
            return .success(id)
        }
        let cause = stored.credential.isUsable ? "credentialNotForReader" : "credentialNotActive"
        let why =
            stored.credential.isUsable
            ? "it is for site \(stored.credential.siteTag), the reader is of site \(attributes.siteTag)"
            : "it is \(stored.credential.state.rawValue)"
        return .failure(
            .failed(
                ReaderConnectionError.forbidden.rawValue,
                "refused: credential \(id.description.prefix(8))… cannot be presented to reader \(reader): \(why)",
                details: [
                    "cause": .string(cause), "reader": .string(reader.description),
                    "credential": .string(id.description),
                ]))
    }
}

/// The handlers by method, each wrapped to decode its params and encode its answer.
private struct HandlerTable {
    var handlers: [ControlMethod: ControlAPI.Handler] = [:]

    mutating func on<Call: ControlCall>(
        _ call: Call.Type,
        _ handler: @escaping @Sendable (Call.Params, ControlClient) async -> Result<Call.Answer, RPCError>
    ) {
        handlers[Call.method] = { params, client in
            do {
                let decoded: Call.Params
                if let none = NoParams() as? Call.Params {
                    // Nothing to read (most calls, status.get among them): no decoder.
                    switch params {
                    case .null, .object: decoded = none
                    default: throw RPCError.invalidParams("params must be an object")
                    }
                } else {
                    // No `params` at all reads as an empty object.
                    decoded = try (params == .null ? .object([:]) : params).decode(Call.Params.self)
                }
                return .success(try JSONValue(encoding: try await handler(decoded, client).get()))
            } catch let error as RPCError {
                return .failure(error)
            } catch {
                return .failure(.internalError("\(error)"))
            }
        }
    }
}
