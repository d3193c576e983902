import AccessJSON
import ControlSocket

/// The control socket's dispatch: one table from `ControlMethod` to its handler. The role a
/// method needs is checked here, once, from the shared contract.
public struct ControlAPI: ControlRequestHandler {
    public typealias Handler =
        @Sendable (_ params: JSONValue, _ client: ControlClient) async -> Result<JSONValue, RPCError>

    let handlers: [ControlMethod: Handler]
    let journal: EventJournal

    public func handle(_ request: RPCRequest, from client: ControlClient) async -> Result<JSONValue, RPCError> {
        guard let method = ControlMethod(rawValue: request.method), let handler = handlers[method] else {
            return .failure(.methodNotFound(request.method))
        }
        guard client.role >= method.role else { return .failure(.forbidden(needs: method.role)) }
        return await handler(request.params, client)
    }

    public func disconnected(_ client: ControlClient) async {
        journal.unsubscribe(client)
    }
}
