import AccessCore
import ControlSocket

/// Performing what the controller decides.
extension AccessEngine {
    /// Performs the controller's actions in their order. What they feed back to the
    /// controller (an exchange that cannot start has ended) is handled after the whole batch:
    /// handled in the middle, its actions came before the rest of the batch's (issue #31).
    func perform(_ actions: [AccessController.Action]) {
        var ended: [ReaderID] = []
        for action in actions {
            switch action {
            case .startExchange(let reader, let origin, let operation):
                requests.operations[reader] = operation
                guard let attributes = sightings.registry.reader(reader), let adapterPath else {
                    ended.append(reader)
                    continue
                }
                exchanges.yield(
                    .start(
                        ExchangeOrder(
                            reader: attributes,
                            devicePath: Self.devicePath(adapter: adapterPath, address: attributes.address),
                            origin: origin, operation: operation,
                            detected: origin == .automatic ? sightings.detected(reader) : nil,
                            trigger: origin == .automatic && openNextReaders.contains(reader)
                                ? AccessTrigger.openNext : nil,
                            credential: Self.request(of: origin).flatMap { requests.presenting.removeValue(forKey: $0) }
                        )))
            case .abortExchange(let reader):
                exchanges.yield(.abort(reader))
            case .startTimer(let timer, let delay):
                startTimer(timer, after: delay)
            case .cancelTimer(let timer):
                timers.removeValue(forKey: timer)?.task.cancel()
            case .refuse(let request, let refusal):
                requests.presenting[request] = nil
                let asked = requests.asked.removeValue(forKey: request)
                requests.answer(
                    request,
                    .failure(
                        self.refusal(
                            refusal, reader: asked?.reader ?? ReaderID(0),
                            operation: asked?.operation ?? .access)))
            case .completed(let reader, let origin, let outcome):
                completed(reader, origin: origin, outcome: outcome)
            case .prepareLink(let reader):
                guard let attributes = sightings.registry.reader(reader), let adapterPath else { continue }
                exchanges.yield(
                    .holdLink(
                        attributes, devicePath: Self.devicePath(adapter: adapterPath, address: attributes.address)))
            case .releaseLink(let reader):
                if controller.automatic.withoutPresence.contains(reader) {
                    logger.notice(
                        "reader sends no presence advertisements while connected: not connecting early to it again",
                        metadata: ["reader": "\(reader)"])
                }
                exchanges.yield(.releaseLink(reader))
            case .openNextClosed(let end):
                openNextClosed(end)
            case .failed(let reader, let origin, let error):
                // The request's timeout: the exchange is aborted, and its end (with the phase it
                // reached) reported soon after; the answer waits for it to say where it stopped.
                guard case .manual(let request) = origin else { continue }
                requests.timedOut[reader] = (request, error)
            }
        }
        for reader in ended {
            perform(controller.handle(.exchangeEnded(reader, .failed(.deviceNotFound)), at: Clocks.monotonic()))
        }
    }

    private func startTimer(_ timer: AccessController.Timer, after delay: Duration) {
        timers[timer]?.task.cancel()
        let id = requests.nextTimer()
        let task = Task { [clock, door] in
            do { try await clock.sleep(for: delay) } catch { return }
            door.yield(.timerFired(timer, id: id))
        }
        timers[timer] = (id, task)
    }

    private func completed(_ reader: ReaderID, origin: ExchangeOrigin, outcome: ExchangeOutcome) {
        var answer = Render.exchange(
            reader, origin: origin, outcome: outcome,
            timings: requests.timings.removeValue(forKey: reader))
        answer.readerName = sightings.registry.reader(reader)?.name
        answer.credential = requests.credentials.removeValue(forKey: reader)?.description
        answer.operation = requests.operations.removeValue(forKey: reader).map(Render.operationName)
        if origin == .automatic, openNextReaders.remove(reader) != nil { answer.trigger = AccessTrigger.openNext }
        journal.emit(answer)
        guard case .manual(let request) = origin else { return }
        let asked = requests.asked.removeValue(forKey: request)
        if case .failed(let failure) = outcome {
            requests.answer(
                request,
                .failure(
                    self.failure(
                        failure.connectionError, cause: failure, reader: reader,
                        operation: asked?.operation, timings: answer.timings)))
        } else {
            requests.answer(request, .success(answer))
        }
    }

    /// The end of an exchange whose request timed out: journalled as it ended, answered as
    /// a timeout with the phase it had reached.
    func timedOutExchangeEnded(
        _ reader: ReaderID, request: RequestID, error: ReaderConnectionError,
        outcome: ExchangeOutcome, timings: ExchangeTimings?
    ) {
        var answer = Render.exchange(reader, origin: .manual(request), outcome: outcome, timings: timings)
        answer.readerName = sightings.registry.reader(reader)?.name
        answer.credential = requests.credentials.removeValue(forKey: reader)?.description
        answer.operation = requests.operations.removeValue(forKey: reader).map(Render.operationName)
        if case .failed = outcome { answer.error = error.rawValue }
        journal.emit(answer)
        let asked = requests.asked.removeValue(forKey: request)
        requests.answer(
            request,
            .failure(
                failure(
                    error, cause: nil, reader: reader, operation: asked?.operation,
                    timings: timings)))
    }

    static func request(of origin: ExchangeOrigin) -> RequestID? {
        if case .manual(let request) = origin { return request }
        return nil
    }

    /// BlueZ's object path of the device at `address` on `adapter`.
    static func devicePath(adapter: String, address: DeviceAddress) -> String {
        adapter + "/dev_" + address.description.replacing(":", with: "_")
    }
}

/// Manual requests waiting for their exchange, and the timings of exchanges that ended
/// until the controller reports them.
struct ManualRequests: Sendable {
    var pending = PendingAnswers<ExchangeAnswer>()
    var timings: [ReaderID: ExchangeTimings] = [:]
    /// What each open request asked for, to say so in its answer.
    var asked: [RequestID: (reader: ReaderID, operation: ExchangeOperation)] = [:]
    /// The credential each ended exchange presented, until the controller reports it.
    var credentials: [ReaderID: CredentialID] = [:]
    /// What each exchange under way does, from its start until it is reported (one
    /// exchange per reader at a time), for `access.completed`.
    var operations: [ReaderID: ExchangeOperation] = [:]
    /// The credential a request asked to present (`access.request {credential}`), until it starts.
    var presenting: [RequestID: CredentialID] = [:]
    /// Requests whose timeout fired, by the reader whose aborted exchange has yet to end.
    var timedOut: [ReaderID: (request: RequestID, error: ReaderConnectionError)] = [:]

    mutating func next() -> RequestID { RequestID(pending.number()) }

    mutating func nextTimer() -> UInt64 { pending.number() }

    mutating func answer(_ request: RequestID, _ result: Result<ExchangeAnswer, RPCError>) {
        pending.answer(request.rawValue, result)
    }
}
