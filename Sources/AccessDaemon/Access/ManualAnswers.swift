import AccessCore
import AccessJSON
import ControlSocket

/// What a client is told when a manual request is refused or fails: the SDK's error as
/// `data.error` (stable, what an SDK client branches on), the cause as `data.cause`, where it
/// failed and after how long, and one sentence saying what to do. The SDK folds "no credential",
/// "suspended" and "reader offers nothing" into `forbidden`; an operator at a door needs which.
/// Each is logged too, so the journal says why as well as the socket (docs/protocol.md).
extension AccessEngine {
    func refusal(_ refusal: ManualRefusal, reader id: ReaderID, operation: ExchangeOperation) -> RPCError {
        let named = Self.named(id, sightings.registry.reader(id)?.name)
        var data: [String: JSONValue] = ["reader": .string(id.description)]
        let message: String
        switch refusal {
        case .readerNotHeard:
            let heard = sightings.registry.readers.sorted { $0.id < $1.id }.prefix(16)
            data["heard"] = .array(heard.map { .string($0.id.description) })
            message =
                heard.isEmpty
                ? "reader \(id) is not heard, nor is any other (is scanning on? accessctl status)"
                : "reader \(id) is not heard; heard now: \(heard.map { Self.named($0.id, $0.name) }.joined(separator: ", "))"
        case .manualAccessNotOffered:
            message = "reader \(named) does not offer manual access (its advertisement says so; the site configures it)"
        case .actionsNotOffered:
            message = "reader \(named) offers no actions (its advertisement says so; the site configures them)"
        case .readerDenied(let layer):
            data["ruleFrom"] = .string(layer.rawValue)
            message = "reader \(named) is on this kiosk's deny list (\(Self.where(layer, id)))"
        case .manualAccessTurnedOff(let layer):
            data["ruleFrom"] = .string(layer.rawValue)
            message = "manual access to reader \(named) is turned off on this kiosk (\(Self.where(layer, id)))"
        case .noCredentialForSite(let site):
            data["site"] = .string(site.description)
            message = "no credential for site \(site) of reader \(named): register one (accessctl credentials register)"
        case .credentialNotActive(let site, let state):
            data["site"] = .string(site.description)
            message =
                state == .revoked
                ? "the credential for site \(site) is revoked by the site: register a new one (accessctl credentials register)"
                : "the credential for site \(site) is suspended by the site: it is presented again once the site resumes it"
        case .credentialOffline(let site):
            data["site"] = .string(site.description)
            message =
                "the credential for site \(site) is withheld: its site has not been reached for longer than [site] max_offline "
                + "(accessctl diagnose says why); it is presented again after the next successful sync"
        case .requestInProgress:
            message = "this request is already under way"
        case .readerBusy:
            message = "reader \(named) is in another exchange; try again in a moment"
        case .noFreeSlot:
            message =
                "every connection is in use ([access] connection_limit = \(controller.slots.limit)); try again in a moment"
        }
        logger.notice(
            "manual request refused",
            metadata: [
                "reader": "\(id)", "operation": "\(Render.operationName(operation))",
                "error": "\(refusal.error)", "cause": "\(refusal.cause)",
            ])
        return .failed(
            refusal.error.rawValue, "refused: " + message,
            details: data.merging(["cause": .string(refusal.cause)]) { first, _ in first })
    }

    /// Where a reader's rule was set, in the words an operator acts on.
    static func `where`(_ layer: ReaderScope.Layer, _ id: ReaderID) -> String {
        switch layer {
        case .configuration: "[readers] or [reader.\(id)] in accessd.toml"
        case .operator: "set by an operator: accessctl readers scope \(id)"
        }
    }

    /// A request that started and failed: which phase (from the timings the exchange engine
    /// reported), after how long, and why, as the exchange failure names it.
    func failure(
        _ error: ReaderConnectionError, cause: ExchangeFailure?, reader id: ReaderID,
        operation: ExchangeOperation?, timings: ExchangeTimings?
    ) -> RPCError {
        let phase = Self.phase(timings)
        var data: [String: JSONValue] = ["reader": .string(id.description), "phase": .string(phase.name)]
        // No cause: the request's own deadline ([access] manual_timeout) ended it.
        data["cause"] = .string(cause.map { "\($0)" } ?? "requestTimeout")
        if let total = timings?.totalMs { data["elapsedMs"] = .double(total) }
        let what = operation.map(Render.operationName) ?? "access"
        var message = "\(what) failed: \(error.rawValue) \(phase.text)"
        if let total = timings?.totalMs { message += " after \(Int(total)) ms" }
        if let advice = Self.advice(cause, error: error, phase: phase.name) { message += ": " + advice }
        logger.notice(
            "manual request failed",
            metadata: [
                "reader": "\(id)", "operation": "\(what)", "error": "\(error)",
                "cause": "\(cause.map { "\($0)" } ?? "-")", "phase": "\(phase.name)",
            ])
        return .failed(error.rawValue, message, details: data)
    }

    /// Where an exchange was when it ended, from the phases it reached.
    static func phase(_ timings: ExchangeTimings?) -> (name: String, text: String) {
        guard let timings else { return ("start", "before connecting") }
        if timings.connectMs == nil { return ("connect", "while connecting") }
        if timings.resolveMs == nil { return ("services", "while resolving the reader's services") }
        return ("exchange", "during the exchange with the reader")
    }

    private static func advice(_ cause: ExchangeFailure?, error: ReaderConnectionError, phase: String) -> String? {
        if cause == .timedOut || (cause == nil && error == .timeout) {
            let limit = cause == nil ? " ([access] manual_timeout)" : ""
            switch phase {
            case "connect": return "the reader is out of reach or not accepting connections" + limit
            case "services": return "the reader connected but did not show its access service" + limit
            default: return "the reader stopped answering" + limit
            }
        }
        switch cause {
        case .remoteClose?: return "the reader dropped the link"
        case .connectionAborted?: return "the controller gave up on the link (interference or range)"
        case .deviceNotFound?: return "BlueZ no longer knows the reader (out of range?)"
        case .adapterBusy?: return "the adapter is busy with another operation; try again"
        case .badReaderSignature?:
            return "its challenge does not verify against the site key: not a reader of this site"
        case .invalidatedCredential?: return "the reader refused the credential (revoked or unknown to it)"
        case .secondFactorRequired?: return "the reader asks for a PIN and this credential has none set"
        case .secondFactorLockedOut?: return "no PIN attempts are left for this credential"
        case .userCancelled?: return "the PIN prompt was declined (secondFactor.cancel)"
        case .operationNotOffered?: return "the reader does not offer that (accessctl actions lists what it does)"
        case .readerBusy?: return "the reader is serving another holder; try again"
        case .protocolViolation?: return "the reader broke the reader protocol (the journal has the detail)"
        case .bluetoothDisabled?: return "the adapter is off or blocked (accessctl diagnose)"
        default: return nil
        }
    }

    static func named(_ id: ReaderID, _ name: String?) -> String {
        guard let name, !name.isEmpty else { return id.description }
        return "\(id) (\(name))"
    }
}
