import AccessCore
import Logging

/// One task per credential held (and not revoked, unless `revokedToo`), started when the
/// credential appears and cancelled when it goes (or is revoked); the set is checked every
/// second until cancelled.
/// What the site's change channel and the audit upload both need: each credential talks to
/// its own site, so a site that hangs holds up only its own credential's task.
enum PerCredentialTasks {
    static func run(
        book: CredentialBook, clock: any Clock<Duration>, revokedToo: Bool = false,
        _ body: @escaping @Sendable (CredentialID) async -> Void
    ) async {
        await withTaskGroup(of: Void.self) { group in
            var running: [CredentialID: Task<Void, Never>] = [:]
            while !Task.isCancelled {
                let held = Set(
                    book.credentials.filter {
                        (revokedToo || $0.credential.state != .revoked) && $0.keyProblem == nil
                    }.map(\.credential.id))
                for (id, task) in running where !held.contains(id) {
                    task.cancel()
                    running[id] = nil
                }
                for id in held where running[id] == nil {
                    let task = Task { await body(id) }
                    running[id] = task
                    group.addTask { await task.value }
                }
                try? await clock.sleep(for: .seconds(1))
            }
            for task in running.values { task.cancel() }
        }
    }
}
