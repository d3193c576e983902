import AccessCore
import BlueZ
import ControlSocket

/// Several adapters (`AdapterSelection`, docs/bluez.md "Several adapters"): which one to scan
/// on, carried out. Every adapter report, every second (the return to a preferred adapter
/// and the end of a quarantine are matters of time) and every stuck or recovered verdict of
/// the ladder asks the selection again; a change moves scanning and says so.
extension DiscoveryService {
    /// `deaf`: why a quarantined adapter was left (`silent`, `stuck`), for the event.
    func reselect(deaf: String = "stuck") {
        let previous = selection.current
        let views = adapters.values.map(selectionView)
        guard selection.update(views, exchangeActive: exchangeActivity.isActive, at: recoveryTime()) else { return }
        let reason = previous.map { switchReason(leaving: $0, views, deaf: deaf) }
        let chosen = selection.current.flatMap { name in adapters.values.first { $0.name == name } }
        // What the ladder measured and said was of the adapter left.
        recovery.adapterChanged()
        if let chosen {
            logger.notice("using adapter", metadata: ["adapter": "\(chosen.name)", "powered": "\(chosen.powered)"])
            use(chosen.path)
            sdk.update { $0.adapterStuck = false }
            adopt(chosen)
        } else {
            use(nil)
            updateSdk {
                $0.adapterPresent = false
                $0.adapterUnfit = false
                $0.adapterStuck = false
                $0.discoveryRunning = false
            }
        }
        if let previous, let chosen, let reason {
            adapterSwitches[reason, default: 0] += 1
            journal.emit(
                RadioRecoveryEvent(adapter: chosen.name, step: .switchedAdapter, previous: previous, reason: reason))
        }
    }

    /// An adapter as the selection sees it. Powered off by a power cycle of ours, it is
    /// still the one to use: the cycle is the ladder's, and it ends powered.
    private func selectionView(_ adapter: AdapterState) -> AdapterSelection.Adapter {
        var powered = adapter.powered
        if case .powerCycling = recovery.state, adapter.path == adapterPath { powered = true }
        return AdapterSelection.Adapter(
            name: adapter.name, powered: powered, blocked: adapter.isBlocked,
            fit: AdapterFitness.problem(roles: adapter.roles) == nil)
    }

    /// Why the adapter `name` was left (`RadioRecoveryEvent.reason`).
    private func switchReason(leaving name: String, _ views: [AdapterSelection.Adapter], deaf: String) -> String {
        guard let left = views.first(where: { $0.name == name }) else { return "removed" }
        if selection.isQuarantined(name, at: recoveryTime()) { return deaf }
        if left.blocked { return "blocked" }
        if !left.powered { return "poweredOff" }
        if !left.fit { return "unfit" }
        return "preferredBack"
    }

    /// The ladder's first silence, with another adapter usable: scanning moves there at once
    /// (5 s after the last advertisement, where climbing the ladder took 17 s in the lab), and
    /// the deaf adapter is power-cycled behind it, which clears a wedged receiver before its
    /// quarantine ends. False when there is no other adapter: the ladder climbs.
    func leaveSilentAdapter() -> Bool {
        let now = recoveryTime()
        guard let name = adapterName, let path = adapterPath,
            selection.hasStandby(adapters.values.map(selectionView), at: now)
        else { return false }
        let silent = recovery.silence(at: now).map { Int($0.components.seconds) }
        selection.quarantine(name, at: now)
        reselect(deaf: "silent")
        powerCycle(name, path: path, silentSeconds: silent, forTheLadder: false)
        return true
    }

    /// The ladder's verdicts, for the selection: a stuck adapter is left when another is
    /// usable; one heard again may be taken again.
    func selectionHeard(stuck: Bool) {
        guard let name = adapterName else { return }
        if stuck {
            selection.quarantine(name, at: recoveryTime())
            reselect()
        } else {
            selection.recovered(name)
        }
    }

    /// `status.get`'s `radio.adapters`: the adapters accessd may use, in preference order.
    var adapterRoles: [AdapterRole] {
        let now = recoveryTime()
        let present = Dictionary(adapters.values.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let names =
            selection.policy.order
            ?? present.keys.sorted { (Int($0.dropFirst(3)) ?? .max, $0) < (Int($1.dropFirst(3)) ?? .max, $1) }
        return names.map { name in
            guard let adapter = present[name] else { return AdapterRole(name: name, role: .absent) }
            if name == adapterName { return AdapterRole(name: name, role: .inUse) }
            if let ends = selection.quarantineEnds(name, at: now) {
                return AdapterRole(
                    name: name, role: .quarantined, quarantineSeconds: Int((ends - now).components.seconds))
            }
            if AdapterFitness.problem(roles: adapter.roles) != nil { return AdapterRole(name: name, role: .unfit) }
            if adapter.isBlocked { return AdapterRole(name: name, role: .blocked) }
            if !adapter.powered { return AdapterRole(name: name, role: .off) }
            return AdapterRole(name: name, role: .standby)
        }
    }
}
