import AccessCore
import NIOConcurrencyHelpers

/// The SDK state (`sdk.state`): its inputs come from several services (discovery, the
/// credentials, site sync); each change that moves the derived state is journalled once, in
/// the order the changes were made.
public final class SdkStatePublisher: Sendable {
    private let tracker: NIOLockedValueBox<SdkStateTracker>
    private let journal: EventJournal

    init(_ inputs: SdkStateInputs, journal: EventJournal) {
        self.tracker = NIOLockedValueBox(SdkStateTracker(inputs))
        self.journal = journal
    }

    public var inputs: SdkStateInputs { tracker.withLockedValue { $0.inputs } }
    public var current: SdkState { tracker.withLockedValue { $0.current } }

    func update(_ change: (inout SdkStateInputs) -> Void) {
        // Journalled under the lock: two services changing inputs at once cannot report
        // their states in the opposite order.
        tracker.withLockedValue { tracker in
            if let state = tracker.update(change) { journal.emit(Render.sdkState(state)) }
        }
    }

    /// The state as it is, journalled (at start).
    func announce() {
        tracker.withLockedValue { journal.emit(Render.sdkState($0.current)) }
    }
}
