import AccessCore
import BlueZ
import Logging

/// The radio's recovery ladder (`RadioRecovery`, docs/bluez.md "A radio that stops hearing"),
/// carried out: a restart of discovery through the discovery machine, a power cycle through
/// bluetoothd (`Adapter1.Powered` off, then on: the kernel resets the controller), and what
/// is said about it (the journal, the SDK state `errorBleStuck`, `status.get`'s `radio`).
extension DiscoveryService {
    /// For every advertisement heard on the adapter in use.
    func heard(reader: Bool) {
        guard let action = recovery.heard(at: Clocks.monotonic(), reader: reader) else { return }
        carryOut(action)
    }

    func recoveryTick() {
        recovery.exchangeActive(exchangeActivity.isActive)
        for action in recovery.tick(at: Clocks.monotonic()) { carryOut(action) }
    }

    private func carryOut(_ action: RadioRecovery.Action) {
        let adapter = adapterName ?? "?"
        switch action {
        case .restartDiscovery:
            logger.notice("the radio hears nothing: restarting discovery", metadata: ["adapter": "\(adapter)"])
            drive(.restart)
        case .powerCycle:
            guard let path = adapterPath else { return }
            logger.warning(
                "the radio still hears nothing: power-cycling the adapter", metadata: ["adapter": "\(adapter)"])
            Task { [central] in
                let ok: Bool
                do throws(BlueZError) {
                    try await central.setPowered(adapter: path, false)
                    try await central.setPowered(adapter: path, true)
                    ok = true
                } catch {
                    self.logger.warning(
                        "the adapter cannot be power-cycled", metadata: ["adapter": "\(adapter)", "error": "\(error)"])
                    ok = false
                }
                self.powerCycleEnded(ok: ok)
            }
        case .reportStuck(let retryIn):
            logger.error(
                "the adapter is stuck: it hears nothing after a restart of discovery and a power cycle",
                metadata: [
                    "adapter": "\(adapter)", "retryInSeconds": "\(retryIn.components.seconds)",
                    "next": "unplug and replug it, or reboot the kiosk",
                ])
            updateSdk { $0.adapterStuck = true }
        case .reportRecovered(let rung, let after):
            logger.notice(
                "the radio hears again",
                metadata: [
                    "adapter": "\(adapter)", "after": "\(rung.rawValue)",
                    "silentSeconds": "\(Double(after.components.seconds))",
                ])
            updateSdk { $0.adapterStuck = false }
        }
    }

    private func powerCycleEnded(ok: Bool) {
        for action in recovery.powerCycleEnded(ok: ok, at: Clocks.monotonic()) { carryOut(action) }
    }
}
