import AccessCore
import AccessJSON
import AccessStore
import ControlSocket

/// `credentials.setPriority`: which site's readers go first when readers of several sites are
/// in range (issue #13, item 3).
extension CredentialAdmin {
    static let priorityRange = -100...100

    func setPriority(_ params: PriorityParams, uid: UInt32) -> Result<CredentialInfo, RPCError> {
        guard Self.priorityRange.contains(params.priority) else {
            return .failure(
                .invalidParams("priority is \(Self.priorityRange.lowerBound) to \(Self.priorityRange.upperBound)"))
        }
        let stored: StoredCredential
        switch find(params.id) {
        case .success(let found): stored = found
        case .failure(let error): return .failure(error)
        }
        let id = stored.credential.id
        do {
            try book.setPriority(params.priority, of: id)
        } catch {
            return .failure(.internalError("cannot save the priority: \(error)"))
        }
        logger.notice(
            "credential priority set",
            metadata: ["credential": "\(id)", "priority": "\(params.priority)", "by": "\(Self.origin(uid))"])
        journal.emit(CredentialsChangedEvent(reason: .priority, credential: id.description, priority: params.priority))
        book.changed()
        let updated = book.credential(id) ?? stored
        return .success(Render.credential(updated, items: book.items, pinAttempts: book.pinAttempts))
    }
}
