import AccessCore
import ControlSocket

/// The reader scope at run time (`readers.setScope`, `readers.resetScope`, a reload): saved
/// first, then applied to the registry, whose changed readers are published and judged again.
extension AccessEngine {
    var scope: ReaderScope { sightings.registry.scope }

    /// An operator's rule for `id` (nil: drop it; nil `id` too: drop every one). `save` gets
    /// the operator's rules to keep before anything changes: if it throws, nothing does.
    func changeScope(
        _ id: ReaderID?, _ rule: ReaderScope.Rule?,
        save: ([ReaderID: ReaderScope.Rule]) throws -> Void
    ) throws -> ReaderScope {
        var scope = sightings.registry.scope
        if let id, let rule {
            try scope.setOperatorRule(rule, for: id)
        } else {
            scope.resetOperatorRules(id)
        }
        try save(scope.operatorRules)
        apply(scope)
        return scope
    }

    /// Publishes each reader the new scope changed, and lets the controller judge it again
    /// at once: a reader allowed while it stands in auto range is armed now, one denied stops
    /// being a candidate (and its held link is dropped), without waiting for an advertisement.
    func apply(_ scope: ReaderScope) {
        let now = Clocks.monotonic()
        for reader in sightings.registry.setScope(scope) {
            journal.emit(Render.reader(reader))
            guard reader.isInAutoConnectRange || connectEarly else { continue }
            judge(reader, at: now)
        }
    }

    /// A reader already heard, judged now as if it had just advertised (an open-next window
    /// opening, a scope change), without waiting for its next advertisement.
    func judge(_ reader: ReaderAttributes, at now: Timestamp) {
        perform(
            controller.handle(
                .readerObserved(
                    reader, isInAutoConnectRange: reader.isInAutoConnectRange,
                    othersHeard: sightings.registry.isAnotherReaderHeard(besides: reader.id)),
                at: now))
    }
}
