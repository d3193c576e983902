import AccessCore
import AccessStore
import ControlSocket
import Logging

/// What each method of the control socket does, over the daemon's services.
extension AccessDaemonServices {
    func makeHandlers() -> [ControlMethod: ControlAPI.Handler] {
        [
            .statusGet: { _, _ in .success(await self.status()) },
            .readersList: { _, _ in .success(["readers": .array(await self.access.readers.map(Render.reader))]) },
            .eventsSubscribe: { params, client in self.subscribe(client, params) },
            .eventsUnsubscribe: { _, client in
                .success(["subscribed": .bool(false), "wasSubscribed": .bool(self.journal.unsubscribe(client))])
            },
            .scanningSet: { params, client in
                await self.toggle(params, client: client, setting: "scanning", answer: "scanningEnabled") {
                    await self.discovery.setScanning($0)
                }
            },
            .automaticAccessSet: { params, client in
                await self.toggle(params, client: client, setting: "automaticAccess", answer: "automaticAccessEnabled") {
                    await self.access.setAutomaticAccess($0)
                }
            },
            .logSetLevel: { params, client in self.setLogLevel(params, client: client) },
            .accessRequest: { params, client in await self.manual(params, client: client) { _ in .success(.access) } },
            .actionsList: { params, client in await self.manual(params, client: client) { _ in .success(.enumerateActions) } },
            .actionsPerform: { params, client in
                await self.manual(params, client: client) { params in
                    guard let id = params["action"]?.int, let action = Int8(exactly: id) else {
                        return .failure(.invalidParams("action must be an action id from actions.list"))
                    }
                    return .success(.performAction(action))
                }
            },
            .secondFactorRespond: { params, _ in
                guard let request = params["request"]?.string, let pin = params["pin"]?.string else {
                    return .failure(.invalidParams("request and pin are required"))
                }
                return await self.exchanges.respond(request: request, pin: pin)
            },
            .credentialsRegister: { params, client in await self.admin.register(params, uid: client.uid) },
            .credentialsList: { _, _ in
                let items = self.book.items
                return .success(["credentials": .array(self.book.credentials.map {
                    Render.credential($0, items: items, pinAttempts: self.book.pinAttempts)
                })])
            },
            .credentialsDelete: { params, client in await self.admin.delete(params, uid: client.uid) },
            .itemsSync: { _, _ in await self.sync.syncNow(reason: "requested") },
            .itemsList: { _, _ in .success(["items": .array(self.book.items.map(Render.item))]) },
        ]
    }

    private func status() async -> JSONValue {
        let state = sdk.current, inputs = sdk.inputs
        let engine = await access.status
        let (scanningEnabled, adapter) = await (discovery.scanningEnabled, discovery.adapterName)
        return [
            "version": .string(AccessDaemon.version),
            "protocolVersion": .int(Int64(ControlProtocol.version)),
            "isScanning": .bool(state.isScanning),
            "states": .array(state.states.map { .string($0.rawValue) }),
            "featureErrors": .array(state.featureSyncErrors.map { .string($0) }),
            "scanningEnabled": .bool(scanningEnabled),
            "automaticAccessEnabled": .bool(engine.automaticAccessEnabled),
            "adapter": adapter.map { .string($0) } ?? .null,
            "bluetoothServicePresent": .bool(inputs.bluetoothServicePresent),
            "readerCount": .int(Int64(engine.readerCount)),
            "credentialCount": .int(Int64(book.credentials.count)),
            "usableCredentialCount": .int(Int64(inputs.usableCredentialCount)),
            "refusedAdvertisements": .int(Int64(engine.refusedAdvertisements)),
            "lastSequence": .int(journal.lastSequence),
            "uptimeSeconds": .int(Int64((Clocks.monotonic() - startedAt).components.seconds)),
        ]
    }

    private func subscribe(_ client: ControlClient, _ params: JSONValue) -> Result<JSONValue, RPCError> {
        var kinds: Set<String>?
        if let requested = params["kinds"] {
            guard let list = requested.array?.compactMap(\.string), list.count == requested.array?.count else {
                return .failure(.invalidParams("kinds must be a list of event kinds"))
            }
            kinds = Set(list)
        }
        var since: Int64?
        if let value = params["since"] {
            guard let sequence = value.int, sequence >= 0 else { return .failure(.invalidParams("since must be a sequence number ≥ 0")) }
            since = sequence
        }
        let subscription: EventJournal.Subscription
        do {
            subscription = try journal.subscribe(client, kinds: kinds, since: since)
        } catch {
            return .failure(.internalError("cannot read the journal: \(error)"))
        }
        var answer: [String: JSONValue] = [
            "subscribed": true, "replayed": .int(Int64(subscription.replayed)), "lastSequence": .int(subscription.lastSequence),
        ]
        // Events older than the journal keeps cannot be replayed: say from where it starts.
        if let first = subscription.oldestAvailable { answer["oldestAvailable"] = .int(first) }
        return .success(.object(answer))
    }

    /// An operator's on/off setting: checked, saved (it outlives restarts), then applied.
    private func toggle(_ params: JSONValue, client: ControlClient, setting: String, answer: String,
                        apply: (Bool) async -> Void) async -> Result<JSONValue, RPCError> {
        guard let enabled = params["enabled"]?.bool else { return .failure(.invalidParams("enabled must be true or false")) }
        do {
            try store.setBoolSetting(setting, enabled)
        } catch {
            return .failure(.internalError("cannot save the setting: \(error)"))
        }
        logger.notice("\(setting) \(enabled ? "enabled" : "disabled") by a client", metadata: ["uid": "\(client.uid)"])
        await apply(enabled)
        return .success(.object([answer: .bool(enabled)]))
    }

    private func setLogLevel(_ params: JSONValue, client: ControlClient) -> Result<JSONValue, RPCError> {
        guard let name = params["level"]?.string, let level = Logger.Level(rawValue: name) else {
            return .failure(.invalidParams("level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))"))
        }
        logLevel.set(level)
        logger.notice("log level set by a client", metadata: ["level": "\(name)", "uid": "\(client.uid)"])
        return .success(["level": .string(name)])
    }

    /// `access.request`, `actions.list`, `actions.perform`.
    private func manual(_ params: JSONValue, client: ControlClient,
                        operation: (JSONValue) -> Result<ExchangeOperation, RPCError>) async -> Result<JSONValue, RPCError> {
        guard let text = params["reader"]?.string, let reader = ReaderID(text) else {
            return .failure(.invalidParams("reader must be a reader id (up to eight hex digits)"))
        }
        switch operation(params) {
        case let .success(exchangeOperation): return await access.request(reader, exchangeOperation, uid: client.uid)
        case let .failure(error): return .failure(error)
        }
    }
}
