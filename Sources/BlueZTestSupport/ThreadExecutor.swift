import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A task executor with one thread of its own.
///
/// The end-to-end tests wait the way a user's script does: a socket call blocks until
/// accessd answers, a child process is read to its end. On Swift's shared cooperative pool,
/// which has one thread a core, two such waits on a 2-core CI machine held every other test
/// still for over 20 s (events recorded but never looked at, readers gone stale before a
/// test could list them). A test that runs on a thread of its own blocks only itself.
public final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var stopping = false
    private var threadRunning = true

    public init() {
        Thread { [self] in
            pthread_setspecific(ownThreadKey, Unmanaged.passUnretained(self).toOpaque())
            runJobs()
        }.start()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        defer { condition.unlock() }
        guard threadRunning else {
            // A job after stop(): nothing waits for it on this executor's thread any more,
            // but it must still run.
            let executor = asUnownedTaskExecutor()
            Thread { job.runSynchronously(on: executor) }.start()
            return
        }
        jobs.append(job)
        condition.signal()
    }

    /// Whether the caller runs on this executor's thread.
    public var isCurrent: Bool {
        pthread_getspecific(ownThreadKey) == Unmanaged.passUnretained(self).toOpaque()
    }

    /// Whether the caller runs on the thread of any `ThreadExecutor`.
    public static var isRunningOnOne: Bool {
        pthread_getspecific(ownThreadKey) != nil
    }

    /// Lets the thread end once every job enqueued so far has run.
    public func stop() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    private func runJobs() {
        let executor = asUnownedTaskExecutor()
        while true {
            condition.lock()
            while jobs.isEmpty && !stopping { condition.wait() }
            if jobs.isEmpty {
                threadRunning = false
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: executor)
        }
    }
}

/// Marks an executor's thread with its executor (`isCurrent`).
private let ownThreadKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
}()

/// Runs `body` with a thread of its own: whatever it blocks on stops nothing else.
public func withThreadOfItsOwn<T>(_ body: () async throws -> T) async rethrows -> T {
    let executor = ThreadExecutor()
    defer { executor.stop() }
    return try await withTaskExecutorPreference(executor, operation: body)
}

/// Starts `body` as a task on a thread of its own: it neither waits for a thread of the
/// shared pool to start (CPU-bound tests running alongside may hold them all) nor blocks one.
public func taskOnThreadOfItsOwn<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) -> Task<T, any Error> {
    let executor = ThreadExecutor()
    return Task(executorPreference: executor) {
        defer { executor.stop() }
        return try await body()
    }
}
