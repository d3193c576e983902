import ControlSocket

/// Callers waiting for an answer to come later (a manual request's exchange, an
/// `items.sync`), by number. When the service that answers them stops, `close` answers
/// every one, and any caller that comes later is answered the same at once: a request that
/// reaches a stopped service must not wait for an answer nobody will give (issue #31: such
/// waits held the socket open until systemd's SIGKILL).
struct PendingAnswers<Value: Sendable>: Sendable {
    typealias Answer = CheckedContinuation<Result<Value, RPCError>, Never>
    private var answers: [UInt64: Answer] = [:]
    private var last: UInt64 = 0
    /// Set by `close`: what every later caller is answered.
    private var closing: Result<Value, RPCError>?

    /// The answer of a service that has stopped.
    static var shuttingDown: Result<Value, RPCError> { .failure(.failed("shuttingDown", "accessd is stopping")) }

    /// A fresh number (requests, timers).
    mutating func number() -> UInt64 {
        last += 1
        return last
    }

    /// Whether `close` was called: the caller is answered at once instead of waiting.
    var isClosed: Bool { closing != nil }

    /// Waits for `answer(id, …)`; answered at once when closed (then returns false, and the
    /// caller must not start the work).
    @discardableResult
    mutating func wait(_ id: UInt64, _ answer: Answer) -> Bool {
        if let closing {
            answer.resume(returning: closing)
            return false
        }
        answers[id] = answer
        return true
    }

    mutating func answer(_ id: UInt64, _ result: Result<Value, RPCError>) {
        answers.removeValue(forKey: id)?.resume(returning: result)
    }

    /// Answers every waiting caller, and every later one, with `result`.
    mutating func close(_ result: Result<Value, RPCError> = shuttingDown) {
        closing = result
        for answer in answers.values { answer.resume(returning: result) }
        answers.removeAll()
    }
}

/// Runs `consume` (a service's input stream) and, beside it, `tick` once a second on
/// `clock`, until either ends or the task is cancelled.
func consumeWhileTicking(
    clock: any Clock<Duration>, consume: @escaping @Sendable () async -> Void,
    tick: @escaping @Sendable () async -> Void
) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await consume() }
        group.addTask {
            while true {
                try await clock.sleep(for: .seconds(1))
                await tick()
            }
        }
        try await group.next()
        group.cancelAll()
    }
}
