#if canImport(Glibc)
import Glibc
#endif

/// A value behind a pthread mutex. Used instead of `Synchronization.Mutex`, whose raw
/// futex use ThreadSanitizer cannot see on Linux: with a pthread mutex, TSan checks the
/// shim's threading for real (`swift build --sanitize=thread`).
final class LockedState<Value>: @unchecked Sendable {
    private var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
