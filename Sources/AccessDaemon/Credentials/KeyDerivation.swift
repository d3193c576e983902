import NIOCore
import NIOPosix

/// Where scrypt runs: sealing and unsealing a second-factor key derives a 32 MiB scrypt key
/// for about a tenth of a second (longer on a kiosk's CPU). On the cooperative pool, which
/// has one thread per core (two on a kiosk), a few PIN answers at once would stall BlueZ's
/// events, the engines and the socket for as long (issue #31). Threads of its own, two at
/// most (one on a single core): the cooperative pool stays free, and more PIN checks queue,
/// which bounds their memory to two derivations'; the attempts they spend are charged before
/// they queue (`CredentialBook`). Not one: in the lab's emulated CPU a debug build takes
/// seconds a derivation, and five PINs typed at once, checked one after another, outlasted
/// the reader's second-factor time (the lock came after the exchange had timed out).
///
/// NIO's `NIOThreadPool` (already linked for the socket) rather than threads by hand.
final class KeyDerivation: Sendable {
    static let threads = max(1, min(2, System.coreCount))
    private let pool: NIOThreadPool

    init() {
        pool = NIOThreadPool(numberOfThreads: Self.threads)
        pool.start()
    }

    deinit {
        pool.shutdownGracefully { _ in }
    }

    /// Runs `body` on a derivation thread, after those queued before it.
    func run<T: Sendable, Failure: Error>(_ body: @escaping @Sendable () throws(Failure) -> T) async
        -> Result<T, KeyDerivationError<Failure>>
    {
        do {
            let result = try await pool.runIfActive { Result(catching: body) }
            return result.mapError { .failed($0) }
        } catch {
            // Only when the pool has stopped, or the caller was cancelled while it waited.
            return .failure(.notRun)
        }
    }
}

enum KeyDerivationError<Failure: Error>: Error {
    case failed(Failure)
    /// accessd is stopping, or the request's caller went away before its turn.
    case notRun
}
