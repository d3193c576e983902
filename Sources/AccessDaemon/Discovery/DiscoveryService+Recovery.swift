import AccessCore
import BlueZ
import ControlSocket
import Logging

/// The radio's recovery ladder (`RadioRecovery`, docs/bluez.md "A radio that stops hearing"),
/// carried out: a restart of discovery through the discovery machine, a power cycle through
/// bluetoothd (`Adapter1.Powered` off, then on: the kernel resets the controller), and what
/// is said about it (the journal, the SDK state `errorBleStuck`, `status.get`'s `radio`).
extension DiscoveryService {
    /// For every advertisement heard on the adapter in use.
    func heard(reader: Bool) {
        guard recoveryEnabled, let action = recovery.heard(at: recoveryTime(), reader: reader) else { return }
        carryOut(action)
    }

    func recoveryTick() {
        guard recoveryEnabled else { return }
        recovery.exchangeActive(exchangeActivity.isActive)
        for action in recovery.tick(at: recoveryTime()) { carryOut(action) }
    }

    /// Each step is a `radio.recovery` event (journalled with its `MESSAGE_ID`, at warning
    /// from the power cycle on), so a fleet alerts on one query.
    private func carryOut(_ action: RadioRecovery.Action) {
        let adapter = adapterName ?? "?"
        let silent = recovery.silence(at: recoveryTime()).map { Int($0.components.seconds) }
        switch action {
        case .restartDiscovery:
            // With another adapter usable, the door is not left waiting for the ladder.
            if leaveSilentAdapter() { return }
            journal.emit(RadioRecoveryEvent(adapter: adapter, step: .restartingDiscovery, silentSeconds: silent))
            drive(.restart)
        case .powerCycle:
            guard let path = adapterPath else { return }
            powerCycleSawOff = false
            powerCycle(adapter, path: path, silentSeconds: silent, forTheLadder: true)
        case .reportStuck(let retryIn):
            journal.emit(
                RadioRecoveryEvent(
                    adapter: adapter, step: .stuck, silentSeconds: silent,
                    retryInSeconds: Int(retryIn.components.seconds)))
            updateSdk { $0.adapterStuck = true }
            selectionHeard(stuck: true)
        case .reportRecovered(let rung, let after):
            journal.emit(
                RadioRecoveryEvent(
                    adapter: adapter, step: .recovered, silentSeconds: Int(after.components.seconds),
                    after: rung.rawValue))
            updateSdk { $0.adapterStuck = false }
            selectionHeard(stuck: false)
        }
    }

    /// For `status.get` and the metrics.
    var radioStatus: RadioStatus {
        let now = recoveryTime()
        var retry: Int?
        let state: String
        switch recovery.state {
        case .idle: state = "idle"
        case .listening: state = "listening"
        case .climbed(.restartDiscovery, _): state = "restartedDiscovery"
        case .climbed(.powerCycle, _): state = "powerCycled"
        case .powerCycling: state = "powerCycling"
        case .stuck(let at):
            state = "stuck"
            retry = max(0, Int((at - now).components.seconds))
        }
        let counts = RadioRecovery.Rung.allCases.flatMap { rung in
            RadioRecovery.Result.allCases.compactMap { result in
                recovery.counts[rung]?[result].map {
                    RecoveryCount(rung: rung.rawValue, result: result.rawValue, count: $0)
                }
            }
        }
        return RadioStatus(
            state: state, recoveries: counts, retryInSeconds: retry, unfit: unfitReason, adapters: adapterRoles)
    }

    /// The power cycle has ended when BlueZ reports the adapter powered again after it was
    /// off (the reports, not the calls' answers: the conditions they change must reach the
    /// ladder first, or it would take the adapter's going off for a change of conditions).
    func powerCycleObserved(_ adapter: AdapterState) {
        guard case .powerCycling = recovery.state, adapter.path == adapterPath else { return }
        if !adapter.powered {
            powerCycleSawOff = true
        } else if powerCycleSawOff {
            powerCycleEnded(ok: true)
        }
    }

    /// Powers an adapter off and on through bluetoothd, said first as a `powerCycling` step.
    /// The ladder's own cycle ends when BlueZ reports the adapter back (`powerCycleObserved`)
    /// or here on a refusal; a cycle behind a move to another adapter (`leaveSilentAdapter`)
    /// is not the ladder's and must not end its wait.
    func powerCycle(_ name: String, path: String, silentSeconds: Int?, forTheLadder: Bool) {
        journal.emit(RadioRecoveryEvent(adapter: name, step: .powerCycling, silentSeconds: silentSeconds))
        Task { [central, journal] in
            do throws(BlueZError) {
                try await central.setPowered(adapter: path, false)
                try await central.setPowered(adapter: path, true)
            } catch {
                journal.emit(RadioRecoveryEvent(adapter: name, step: .cannotPowerCycle, error: "\(error)"))
                if forTheLadder { self.powerCycleEnded(ok: false) }
            }
        }
    }

    private func powerCycleEnded(ok: Bool) {
        for action in recovery.powerCycleEnded(ok: ok, at: recoveryTime()) { carryOut(action) }
    }
}
