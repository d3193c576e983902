import ControlSocket

/// Callers waiting for an answer to come later (a manual request's exchange, an
/// `items.sync`), by number; all answered at shutdown so nobody waits forever.
struct PendingAnswers<Value: Sendable>: Sendable {
    typealias Answer = CheckedContinuation<Result<Value, RPCError>, Never>
    private var answers: [UInt64: Answer] = [:]
    private var last: UInt64 = 0

    /// A fresh number (requests, timers).
    mutating func number() -> UInt64 {
        last += 1
        return last
    }

    mutating func wait(_ id: UInt64, _ answer: Answer) { answers[id] = answer }

    mutating func answer(_ id: UInt64, _ result: Result<Value, RPCError>) {
        answers.removeValue(forKey: id)?.resume(returning: result)
    }

    mutating func answerAll(_ result: Result<Value, RPCError>) {
        for answer in answers.values { answer.resume(returning: result) }
        answers.removeAll()
    }
}

/// Runs `consume` (a service's input stream) and, beside it, `tick` once a second on
/// `clock`, until either ends or the task is cancelled.
func consumeWhileTicking(clock: any Clock<Duration>, consume: @escaping @Sendable () async -> Void,
                         tick: @escaping @Sendable () async -> Void) async throws {
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
