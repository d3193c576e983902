import Dispatch
import Synchronization

/// The value of `body`, run on the concurrency pool, waited for on this thread. accessctl's
/// commands are synchronous (they run on the main thread, outside the pool), and a few of
/// their steps are asynchronous only (swift-subprocess's `run`): blocking the main thread
/// for one is safe, as no task of the pool waits for it.
func waiting<Value: Sendable>(_ body: @escaping @Sendable () async -> Value) -> Value {
    let answer = Mutex<Value?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let value = await body()
        answer.withLock { $0 = value }
        done.signal()
    }
    done.wait()
    return answer.withLock { $0! }
}
