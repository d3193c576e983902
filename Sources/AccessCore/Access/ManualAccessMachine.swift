/// Handles `requestAccess(reader)` and reader actions asked for by a client: refuses what
/// cannot be done with the SDK's errors, and bounds every accepted request with its own
/// timeout.
public struct ManualAccessMachine: Sendable {
    public struct Configuration: Hashable, Sendable {
        /// From the request to the decision, connection included.
        public var timeout: Duration

        public init(timeout: Duration = .seconds(15)) {
            self.timeout = timeout
        }
    }

    public enum Input: Hashable, Sendable {
        /// `reader` is the registry's current view (nil when unknown or unavailable).
        case request(RequestID, ReaderID, ExchangeOperation, reader: ReaderAttributes?)
        case exchangeEnded(RequestID, ExchangeOutcome)
        case timerFired(RequestID)
    }

    public enum Action: Hashable, Sendable {
        case startExchange(ReaderID, RequestID, ExchangeOperation)
        case abortExchange(ReaderID, RequestID)
        case startTimer(RequestID, after: Duration)
        case cancelTimer(RequestID)
        case refuse(RequestID, ManualRefusal)
        case complete(RequestID, ReaderID, ExchangeOutcome)
        case fail(RequestID, ReaderID, ReaderConnectionError)
    }

    public var configuration: Configuration
    private var inFlight: [RequestID: ReaderID] = [:]

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    public mutating func handle(_ input: Input, slots: ExchangeSlots, credentials: CredentialAvailability) -> [Action] {
        switch input {
        case .request(let request, let readerID, let operation, let reader):
            if let error = refusal(
                readerID, operation, reader: reader, slots: slots, credentials: credentials,
                request: request)
            {
                return [.refuse(request, error)]
            }
            inFlight[request] = readerID
            return [.startExchange(readerID, request, operation), .startTimer(request, after: configuration.timeout)]

        case .exchangeEnded(let request, let outcome):
            // An exchange that ends after its request timed out is not reported twice.
            guard let reader = inFlight.removeValue(forKey: request) else { return [] }
            return [.cancelTimer(request), .complete(request, reader, outcome)]

        case .timerFired(let request):
            guard let reader = inFlight.removeValue(forKey: request) else { return [] }
            return [.abortExchange(reader, request), .fail(request, reader, .timeout)]
        }
    }

    private func refusal(
        _ readerID: ReaderID, _ operation: ExchangeOperation, reader: ReaderAttributes?, slots: ExchangeSlots,
        credentials: CredentialAvailability, request: RequestID
    ) -> ManualRefusal? {
        if inFlight[request] != nil { return .requestInProgress }
        guard let reader, reader.id == readerID else { return .readerNotHeard }
        if reader.scope.manualBecause == .denied || reader.scope.automaticBecause == .denied {
            return .readerDenied(reader.scope.ruleFrom ?? .configuration)
        }
        switch operation {
        case .access:
            guard reader.isBleManualConnectEnabled else { return .manualAccessNotOffered }
            if reader.scope.manualBecause == .turnedOff {
                return .manualAccessTurnedOff(reader.scope.ruleFrom ?? .configuration)
            }
        case .enumerateActions, .performAction:
            guard reader.isBleActionsEnabled else { return .actionsNotOffered }
        }
        if let refusal = credentials.refusal(to: reader.kind, site: reader.siteTag) { return refusal }
        if slots.isBusy(readerID) { return .readerBusy }
        if slots.freeCount == 0 { return .noFreeSlot }
        return nil
    }
}
