import AccessCore
import AccessStore
import BlueZ
import ControlSocket
import Crypto
import Foundation
import Logging

/// One exchange with a reader in progress: the protocol session, the link it runs over,
/// and who is waiting for it.
struct ExchangeRun: Sendable {
    var session: CredentialSession
    var origin: ExchangeOrigin
    var credential: CredentialID?
    var devicePath: String
    var characteristicPath: String?
    var link: Task<Void, Never>?
    var stepTimer: Task<Void, Never>?
    /// The pending second-factor prompt (`secondFactor.required`), if any.
    var secondFactorRequest: String?
    var started: ContinuousClock.Instant
    var ended = false
    /// Phases, for `access.completed`'s `timings`.
    var detected: ContinuousClock.Instant?
    var connected: ContinuousClock.Instant?
    var resolved: ContinuousClock.Instant?

    /// Milliseconds per phase: detection (first in-range advertisement → exchange start,
    /// automatic only), connect, service resolution, protocol exchange, and in all.
    func timings(endedAt end: ContinuousClock.Instant) -> JSONValue {
        func ms(_ from: ContinuousClock.Instant?, _ to: ContinuousClock.Instant?) -> JSONValue {
            guard let from, let to else { return .null }
            let d = to - from
            return .double((Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15).rounded())
        }
        return ["detectionMs": ms(detected, started), "connectMs": ms(started, connected),
                "resolveMs": ms(connected, resolved), "exchangeMs": ms(resolved, end),
                "totalMs": ms(detected ?? started, end)]
    }
}

/// The exchange engine: performs what `AccessController` decides (connect, run the
/// credential side of the protocol over the reader's control point, report the end), owns
/// the controller's timers, and answers manual requests when their exchange ends.
extension AccessService {
    // MARK: Controller actions

    func perform(_ actions: [AccessController.Action]) {
        for action in actions {
            switch action {
            case let .startExchange(reader, origin, operation):
                startExchange(reader, origin: origin, operation: operation)
            case let .abortExchange(reader):
                abortExchange(reader, because: .timedOut)
            case let .startTimer(timer, delay):
                controllerTimers[timer]?.cancel()
                controllerTimers[timer] = Task { [weak self] in
                    try? await Task.sleep(for: delay)
                    guard !Task.isCancelled else { return }
                    await self?.controllerTimerFired(timer)
                }
            case let .cancelTimer(timer):
                controllerTimers.removeValue(forKey: timer)?.cancel()
            case let .refuse(request, error):
                answer(request, .failure(.failed(error.rawValue, "refused: \(error.rawValue)")))
            case let .completed(reader, origin, outcome):
                completed(reader, origin: origin, outcome: outcome)
            case let .prepareLink(reader):
                prepareLink(reader)
            case let .releaseLink(reader):
                releaseLink(reader)
            case let .failed(reader, origin, error):
                emit("access.completed", ["reader": .string(reader.description), "origin": Render.origin(origin),
                                          "outcome": "failed", "error": .string(error.rawValue)])
                if case let .manual(request) = origin {
                    answer(request, .failure(.failed(error.rawValue, "access failed: \(error.rawValue)")))
                }
            }
        }
    }

    private func controllerTimerFired(_ timer: AccessController.Timer) {
        guard controllerTimers.removeValue(forKey: timer) != nil else { return }
        perform(controller.handle(.timerFired(timer), at: Clocks.monotonic()))
    }

    private func completed(_ reader: ReaderID, origin: ExchangeOrigin, outcome: ExchangeOutcome) {
        var data = Render.outcome(outcome)
        data["reader"] = .string(reader.description)
        data["origin"] = Render.origin(origin)
        if let timings = lastTimings.removeValue(forKey: reader) { data["timings"] = timings }
        emit("access.completed", .object(data))
        guard case let .manual(request) = origin else { return }
        if case let .failed(failure) = outcome {
            let error = failure.connectionError.rawValue
            answer(request, .failure(.failed(error, "access failed: \(error)")))
        } else {
            answer(request, .success(.object(data)))
        }
    }

    private func answer(_ request: RequestID, _ result: Result<JSONValue, RPCError>) {
        pendingRequests.removeValue(forKey: request)?.resume(returning: result)
    }

    /// The service is stopping: pending requests are answered, timers stopped, and every link
    /// accessd opened or is opening is dropped. bluetoothd does not cancel a Connect whose
    /// caller left the bus: it would keep connecting to the reader for a daemon that is gone,
    /// and a connection attempt that then fails with its socket still open has crashed the
    /// Bluetooth stack of Linux 6.1 (a kernel BUG in `hci_chan_del`, seen in the lab). Waits
    /// for bluetoothd's answers at most `grace`, so stopping stays quick.
    func shutDownExchanges(grace: Duration = .seconds(3)) async {
        for (_, continuation) in pendingRequests {
            continuation.resume(returning: .failure(.failed("shuttingDown", "accessd is stopping")))
        }
        pendingRequests.removeAll()
        for timer in controllerTimers.values { timer.cancel() }
        controllerTimers.removeAll()
        var disconnects = Array(pendingDisconnects.values)
        pendingDisconnects.removeAll()
        for (_, link) in preparedLinks {
            link.ready.cancel()
            let device = link.devicePath
            logger.info("dropping the early link on stop", metadata: ["device": "\(device)"])
            disconnects.append(Task { [bluez] in try? await bluez.disconnect(device: device, timeout: grace) })
        }
        preparedLinks.removeAll()
        for run in exchanges.values {
            run.link?.cancel()
            run.stepTimer?.cancel()
            let device = run.devicePath
            logger.info("dropping the link on stop", metadata: ["device": "\(device)"])
            disconnects.append(Task { [bluez] in try? await bluez.disconnect(device: device, timeout: grace) })
        }
        exchanges.removeAll()
        secondFactorPrompts.removeAll()
        guard !disconnects.isEmpty else { return }
        let sent = disconnects
        // Not cancelled with the service's task, so the disconnects are sent and awaited.
        await Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { for disconnect in sent { await disconnect.value } }
                group.addTask { try? await Task.sleep(for: grace) }
                await group.next()
                group.cancelAll()
            }
        }.value
    }

    // MARK: Manual requests

    /// `access.request`, `actions.list`, `actions.perform`: the controller decides whether
    /// the request may start; the answer comes when its exchange ends (or its timeout).
    func manualRequest(_ params: JSONValue, operation: (JSONValue) -> Result<ExchangeOperation, RPCError>,
                       client: ControlClient) async -> Result<JSONValue, RPCError> {
        guard client.role >= .operator else { return .failure(.forbidden(needs: .operator)) }
        guard let text = params["reader"]?.string, let readerID = ReaderID(text) else {
            return .failure(.invalidParams("reader must be a reader id (up to eight hex digits)"))
        }
        let exchangeOperation: ExchangeOperation
        switch operation(params) {
        case let .success(value): exchangeOperation = value
        case let .failure(error): return .failure(error)
        }
        nextRequest += 1
        let request = RequestID(nextRequest)
        logger.info("manual request", metadata: ["reader": "\(readerID)", "operation": "\(exchangeOperation)", "uid": "\(client.uid)"])
        return await withCheckedContinuation { continuation in
            pendingRequests[request] = continuation
            perform(controller.handle(.request(request, readerID, exchangeOperation, reader: registry.reader(readerID)),
                                      at: Clocks.monotonic()))
        }
    }

    // MARK: Exchanges

    private func startExchange(_ reader: ReaderID, origin: ExchangeOrigin, operation: ExchangeOperation) {
        guard let attributes = registry.reader(reader), let adapter = adapterPath else {
            finishExchange(reader, .failed(.deviceNotFound))
            return
        }
        guard let (presentation, credential, sitePublicKey) = presentation(for: attributes) else {
            // The controller checked availability; a credential changed meanwhile.
            finishExchange(reader, .failed(.invalidatedCredential))
            return
        }
        let devicePath = Self.devicePath(adapter: adapter, address: attributes.address)
        let session = CredentialSession(
            readerID: reader, siteTag: attributes.siteTag, sitePublicKey: sitePublicKey, presentation: presentation,
            operation: operation, timeouts: ProtocolTimeouts(step: configuration.stepTimeout,
                                                             secondFactor: configuration.secondFactorTimeout))
        exchanges[reader] = ExchangeRun(session: session, origin: origin, credential: credential, devicePath: devicePath,
                                        started: ContinuousClock.now,
                                        detected: origin == .automatic ? firstInRange[reader] : nil)
        emit("access.started", ["reader": .string(reader.description), "origin": Render.origin(origin),
                                "operation": Render.operation(operation)])
        logger.info("exchange starting", metadata: ["reader": "\(reader)", "device": "\(devicePath)"])
        let connectTimeout = configuration.stepTimeout * 2
        exchanges[reader]?.link = Task { [weak self] in
            await self?.runLink(reader, devicePath: devicePath, connectTimeout: connectTimeout)
        }
    }

    /// What is presented to this reader, the credential it belongs to, and the key its
    /// challenges must verify against.
    private func presentation(for reader: ReaderAttributes)
        -> (CredentialSession.Presentation, CredentialID?, P256.Signing.PublicKey)?
    {
        let active = credentials.filter { $0.credential.isUsable && $0.credential.siteTag == reader.siteTag }
        switch reader.kind {
        case .gallagherStyle:
            guard let stored = active.first, let key = stored.credential.signingKey else { return nil }
            return (.mobile(stored.credential.id, key), stored.credential.id, stored.credential.sitePublicKey)
        case .aperioStyle:
            guard configuration.features.contains("aperio") else { return nil }
            for item in items where item.state == .active && item.siteTag == reader.siteTag {
                guard let secret = item.aperioSecret,
                      let owner = credentials.first(where: { $0.credential.id == item.credentialID && $0.credential.isUsable })
                else { continue }
                return (.aperio(secret), owner.credential.id, owner.credential.sitePublicKey)
            }
            return nil
        }
    }

    // MARK: Connecting early

    /// BlueZ's object path of the device at `address` on `adapter`.
    static func devicePath(adapter: String, address: DeviceAddress) -> String {
        adapter + "/dev_" + address.description.replacingOccurrences(of: ":", with: "_")
    }

    private func devicePath(of reader: ReaderID) -> String? {
        guard let attributes = registry.reader(reader), let adapter = adapterPath else { return nil }
        return Self.devicePath(adapter: adapter, address: attributes.address)
    }

    /// Connects to a reader still outside auto-connect range and resolves its services; the
    /// exchange that follows at auto range finds the link up. A failure here costs nothing:
    /// the exchange connects by itself.
    private func prepareLink(_ reader: ReaderID) {
        guard let devicePath = devicePath(of: reader) else { return }
        let timeout = configuration.stepTimeout * 2
        let previous = pendingDisconnects.removeValue(forKey: devicePath)
        logger.info("connecting early", metadata: ["reader": "\(reader)", "device": "\(devicePath)"])
        let ready = Task { [weak self, bluez, logger] in
            await previous?.value
            do {
                let deadline = ContinuousClock.now + timeout
                try await bluez.connect(device: devicePath, timeout: timeout)
                try await bluez.waitForServicesResolved(device: devicePath, timeout: deadline - ContinuousClock.now)
            } catch {
                logger.info("connecting early failed", metadata: ["reader": "\(reader)", "error": "\(error)"])
                return
            }
            await self?.linkPrepared(reader)
        }
        preparedLinks[reader] = (devicePath, ready)
    }

    private func linkPrepared(_ reader: ReaderID) {
        guard preparedLinks[reader] != nil else { return }
        perform(controller.handle(.linkPrepared(reader), at: Clocks.monotonic()))
    }

    /// Drops a prepared link that no exchange took over.
    private func releaseLink(_ reader: ReaderID) {
        guard let link = preparedLinks.removeValue(forKey: reader) else { return }
        link.ready.cancel()
        guard exchanges[reader] == nil else { return }
        if controller.automatic.withoutPresence.contains(reader) {
            logger.notice("reader sends no presence advertisements while connected: not connecting early to it again",
                          metadata: ["reader": "\(reader)"])
        }
        logger.info("dropping the early link", metadata: ["reader": "\(reader)"])
        let device = link.devicePath
        let previous = pendingDisconnects[device]
        pendingDisconnects[device] = Task { [bluez] in
            await link.ready.value
            await previous?.value
            try? await bluez.disconnect(device: device)
        }
    }

    /// Connects, finds the control point, subscribes, and feeds the session until the
    /// link or the session ends.
    private func runLink(_ reader: ReaderID, devicePath: String, connectTimeout: Duration) async {
        if let prepared = preparedLinks.removeValue(forKey: reader) {
            // Connected early: wait for that connection (BlueZ answers Connect on a
            // connected device at once, and its services are resolved).
            await prepared.ready.value
        }
        if let disconnecting = pendingDisconnects.removeValue(forKey: devicePath) { await disconnecting.value }
        do {
            let deadline = ContinuousClock.now + connectTimeout
            try await bluez.connect(device: devicePath, timeout: connectTimeout)
            exchanges[reader]?.connected = ContinuousClock.now
            try await bluez.waitForServicesResolved(device: devicePath, timeout: deadline - ContinuousClock.now)
            exchanges[reader]?.resolved = ContinuousClock.now
            guard !Task.isCancelled else { return }
            guard let characteristic = await bluez.characteristic(device: devicePath, service: ReaderGATT.serviceUUID,
                                                                  characteristic: ReaderGATT.controlPointUUID) else {
                logger.warning("reader has no control point", metadata: ["reader": "\(reader)"])
                sessionEnded(reader, .failed(.protocolViolation))
                return
            }
            let notifications = try await bluez.notifications(characteristic: characteristic.path)
            exchanges[reader]?.characteristicPath = characteristic.path
            if let mtu = characteristic.mtu { await sessionInput(reader, .mtuChanged(mtu)) }
            await sessionInput(reader, .connected)
            for await fragment in notifications {
                guard !Task.isCancelled, exchanges[reader]?.ended == false else { return }
                await sessionInput(reader, .fragmentReceived(fragment))
            }
            guard !Task.isCancelled else { return }
            await sessionInput(reader, .disconnected)
        } catch {
            guard !Task.isCancelled else { return }
            logger.info("link failed", metadata: ["reader": "\(reader)", "error": "\(error)"])
            sessionEnded(reader, .failed(Self.failure(for: error)))
        }
    }

    static func failure(for error: BlueZError) -> ExchangeFailure {
        switch error {
        case .doesNotExist, .serviceUnknown: .deviceNotFound
        case .inProgress, .notReady: .adapterBusy
        case .timeout: .timedOut
        case .disconnected: .remoteClose
        default: .connectionAborted
        }
    }

    /// Feeds the session one input and performs what it returns, in order.
    private func sessionInput(_ reader: ReaderID, _ input: CredentialSession.Input) async {
        guard var session = exchanges[reader]?.session, exchanges[reader]?.ended == false else { return }
        let actions = session.handle(input, replayGuard: &replayGuard)
        exchanges[reader]?.session = session
        for action in actions {
            switch action {
            case let .send(fragments):
                guard let path = exchanges[reader]?.characteristicPath else { continue }
                for fragment in fragments {
                    do {
                        try await bluez.writeValue(characteristic: path, fragment, timeout: configuration.stepTimeout)
                    } catch {
                        // A failed write while the session is finishing is the reader's loss; mid-session it ends it.
                        if exchanges[reader]?.session.isFinished == false {
                            sessionEnded(reader, .failed(.remoteClose))
                        }
                        break
                    }
                }
            case let .startTimer(delay):
                exchanges[reader]?.stepTimer?.cancel()
                exchanges[reader]?.stepTimer = Task { [weak self] in
                    try? await Task.sleep(for: delay)
                    guard !Task.isCancelled else { return }
                    await self?.sessionInput(reader, .timerFired)
                }
            case .cancelTimer:
                exchanges[reader]?.stepTimer?.cancel()
                exchanges[reader]?.stepTimer = nil
            case .requestSecondFactor:
                requestSecondFactor(reader)
            case let .finish(outcome):
                sessionEnded(reader, outcome)
            }
        }
    }

    /// The reader's link went down (BlueZ says so before any notification stream ends: its
    /// GATT objects outlive the connection, as they are cached).
    func linkDropped(device: String) async {
        for (reader, run) in exchanges where run.devicePath == device && run.characteristicPath != nil && !run.ended {
            logger.info("reader dropped the link", metadata: ["reader": "\(reader)"])
            await sessionInput(reader, .disconnected)
        }
    }

    /// Ends an exchange once: stops its link and timer, disconnects, and reports it.
    private func sessionEnded(_ reader: ReaderID, _ outcome: ExchangeOutcome) {
        guard var run = exchanges[reader], !run.ended else { return }
        run.ended = true
        run.stepTimer?.cancel()
        run.link?.cancel()
        if let request = run.secondFactorRequest { secondFactorPrompts[request] = nil }
        exchanges[reader] = nil
        let timings = run.timings(endedAt: ContinuousClock.now)
        lastTimings[reader] = timings
        logger.info("exchange ended", metadata: ["reader": "\(reader)", "outcome": "\(outcome)", "timings": "\(timings.jsonText)"])
        // The link is dropped in the background so the decision is reported at once; the
        // next exchange with this device waits for it (a Connect racing a Disconnect fails).
        let device = run.devicePath
        let previous = pendingDisconnects[device]
        pendingDisconnects[device] = Task { [bluez] in
            await previous?.value
            try? await bluez.disconnect(device: device)
        }
        finishExchange(reader, outcome)
    }

    private func finishExchange(_ reader: ReaderID, _ outcome: ExchangeOutcome) {
        perform(controller.handle(.exchangeEnded(reader, outcome), at: Clocks.monotonic()))
    }

    private func abortExchange(_ reader: ReaderID, because failure: ExchangeFailure) {
        sessionEnded(reader, .failed(failure))
    }

    // MARK: Second factor

    private func requestSecondFactor(_ reader: ReaderID) {
        guard let run = exchanges[reader], let credential = run.credential else { return }
        // A person is typing now: the reader's second-factor timeout governs, not the
        // manual request's (which is meant for connecting and deciding).
        if case let .manual(manual) = run.origin {
            controllerTimers.removeValue(forKey: .manual(manual))?.cancel()
        }
        nextRequest += 1
        let request = "sf-\(nextRequest)"
        exchanges[reader]?.secondFactorRequest = request
        secondFactorPrompts[request] = reader
        let stored = credentials.first { $0.credential.id == credential }
        guard let stored, stored.credential.sealedSecondFactor != nil else {
            Task { await self.sessionInput(reader, .secondFactorUnavailable(.secondFactorRequired)) }
            return
        }
        if stored.failedPinAttempts >= configuration.pinAttempts {
            Task { await self.sessionInput(reader, .secondFactorUnavailable(.secondFactorLockedOut)) }
            return
        }
        emit("secondFactor.required", [
            "request": .string(request), "reader": .string(reader.description), "credential": .string(credential.description),
            "prompt": .string(configuration.secondFactorPrompt),
            "attemptsLeft": .int(Int64(configuration.pinAttempts - stored.failedPinAttempts)),
            "timeoutSeconds": .int(configuration.secondFactorTimeout.components.seconds),
        ])
    }

    /// `secondFactor.respond {request, pin}`: unseals the key with the PIN. A wrong PIN
    /// leaves the prompt open (until the attempts run out or the reader's time does).
    func respondToSecondFactor(_ params: JSONValue, client: ControlClient) async -> Result<JSONValue, RPCError> {
        guard client.role >= .operator else { return .failure(.forbidden(needs: .operator)) }
        guard let request = params["request"]?.string, let pin = params["pin"]?.string else {
            return .failure(.invalidParams("request and pin are required"))
        }
        guard let reader = secondFactorPrompts[request], let credentialID = exchanges[reader]?.credential,
              let stored = credentials.first(where: { $0.credential.id == credentialID }),
              let sealed = stored.credential.sealedSecondFactor else {
            return .failure(.failed("secondFactor.noSuchRequest", "no second-factor prompt \(request) is open"))
        }
        let initialGuard = SecondFactorGuard(maximumAttempts: configuration.pinAttempts,
                                             failedAttempts: stored.failedPinAttempts)
        // scrypt is slow on purpose: off the actor. The guard's count is applied after.
        let outcome = await Task.detached { () -> (SecondFactorGuard, Result<P256.Signing.PrivateKey, SecondFactorError>) in
            var local = initialGuard
            let result = Result { () throws(SecondFactorError) -> P256.Signing.PrivateKey in
                try local.unseal(sealed, pin: pin, credential: credentialID)
            }
            return (local, result)
        }.value
        let guardState = outcome.0
        setFailedPinAttempts(credentialID, guardState.failedAttempts)
        switch outcome.1 {
        case let .success(key):
            secondFactorPrompts[request] = nil
            await sessionInput(reader, .secondFactorKey(key))
            return .success(["request": .string(request), "accepted": true])
        case .failure(.lockedOut):
            secondFactorPrompts[request] = nil
            logger.warning("second factor locked after wrong PINs", metadata: ["credential": "\(credentialID)"])
            await sessionInput(reader, .secondFactorUnavailable(.secondFactorLockedOut))
            return .failure(.failed("secondFactorLockedOut", "wrong PIN; the second factor is now locked"))
        case .failure(.wrongPIN):
            return .failure(RPCError(code: -32010, message: "wrong PIN",
                                     data: ["error": "secondFactor.wrongPin", "attemptsLeft": .int(Int64(guardState.attemptsLeft))]))
        case let .failure(error):
            return .failure(.invalidParams("pin: \(error)"))
        }
    }

    private func setFailedPinAttempts(_ id: CredentialID, _ count: Int) {
        guard let index = credentials.firstIndex(where: { $0.credential.id == id }),
              credentials[index].failedPinAttempts != count else { return }
        credentials[index].failedPinAttempts = count
        do {
            try store.setFailedPinAttempts(id, count)
        } catch {
            logger.error("cannot store the PIN attempt count", metadata: ["error": "\(error)"])
        }
        credentialsDidChange()
    }
}

extension Render {
    static func origin(_ origin: ExchangeOrigin) -> JSONValue {
        switch origin {
        case .automatic: "automatic"
        case .manual: "manual"
        }
    }

    static func operation(_ operation: ExchangeOperation) -> JSONValue {
        switch operation {
        case .access: "access"
        case .enumerateActions: "actions.list"
        case let .performAction(id): .string("actions.perform \(id)")
        }
    }

    static func result(_ result: AccessResult) -> [String: JSONValue] {
        ["decision": .string(result.decision.description), "granted": .bool(result.decision.isGranted),
         "mode": .string(result.mode.description)]
    }

    static func outcome(_ outcome: ExchangeOutcome) -> [String: JSONValue] {
        switch outcome {
        case let .decided(result):
            var data = Self.result(result)
            data["outcome"] = "decided"
            return data
        case let .actionsListed(actions):
            return ["outcome": "actionsListed",
                    "actions": .array(actions.map { ["id": .int(Int64($0.id)), "name": .string($0.name),
                                                     "type": .string($0.type.description)] })]
        case let .actionPerformed(id, result):
            var data = Self.result(result)
            data["outcome"] = "actionPerformed"
            data["action"] = .int(Int64(id))
            return data
        case let .failed(failure):
            return ["outcome": "failed", "error": .string(failure.connectionError.rawValue)]
        }
    }
}
