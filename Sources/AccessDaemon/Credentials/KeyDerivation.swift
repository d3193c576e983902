import NIOPosix

/// Where scrypt runs: sealing and unsealing a second-factor key derives a 32 MiB scrypt key
/// for about a tenth of a second (longer on a kiosk's CPU). On the cooperative pool, which
/// has one thread per core (two on a kiosk), a few PIN answers at once would stall BlueZ's
/// events, the engines and the socket for as long (issue #31). One thread of its own: PIN
/// checks wait for each other, which also bounds the memory they take to one derivation's;
/// the attempts they spend are charged before they queue (`CredentialBook`).
///
/// NIO's `NIOThreadPool` (already linked for the socket) rather than a thread by hand.
final class KeyDerivation: Sendable {
    private let pool: NIOThreadPool

    init() {
        pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
    }

    deinit {
        pool.shutdownGracefully { _ in }
    }

    /// Runs `body` on the derivation thread, after those queued before it.
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
