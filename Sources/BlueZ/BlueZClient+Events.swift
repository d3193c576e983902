/// What the client reports, and how its queue stays bounded (docs/bluez.md, "Events").
extension BlueZClient {
    /// The key `othersHeard` waits under: one event stands for any number of them. Device
    /// keys are object paths, which start with `/`.
    static let othersHeardKey = "others"

    func post(_ event: BlueZEvent, key: String? = nil) {
        guard events.post(event, key: key) == .dropped else { return }
        startOver()
    }

    /// An advertisement: reported if the device is one of interest, else counted as heard.
    func advertised(_ device: DeviceState) {
        guard isOfInterest(device) else {
            post(.othersHeard, key: Self.othersHeardKey)
            return
        }
        announced.insert(device.path)
        post(.deviceAdvertised(device), key: device.path)
    }

    /// A link changed: reported for devices reported before (a reader accessd connects to
    /// was heard advertising first).
    func connectionChanged(_ device: DeviceState) {
        guard announced.contains(device.path) || isOfInterest(device) else { return }
        post(.deviceConnectionChanged(device))
    }

    /// A device is gone: reported if it was reported.
    func removed(_ path: String) {
        guard announced.remove(path) != nil else { return }
        post(.deviceRemoved(path: path))
    }

    func isOfInterest(_ device: DeviceState) -> Bool {
        guard let advertisementsOf else { return true }
        return announced.contains(device.path) || !advertisementsOf.isDisjoint(with: device.serviceData.keys)
    }

    /// The consumer fell `eventCapacity` events behind: what waits is replaced by what it
    /// would have ended in, told as bluetoothd leaving and coming back (every reported device
    /// and adapter removed, then the tree as the mirror has it now). The consumer handles
    /// that already (docs/bluez.md); the alternative, dropping events, could lose a
    /// disconnection for good.
    func startOver() {
        eventResets += 1
        var restart: [BlueZEvent] = announced.sorted().map { .deviceRemoved(path: $0) }
        restart += adapters.keys.sorted().map { .adapterRemoved(path: $0) }
        restart.append(.serviceVanished)
        announced = []
        if isServicePresent {
            restart += adapters.keys.sorted().compactMap { adapters[$0].map(BlueZEvent.adapterAdded) }
            for path in devices.keys.sorted() {
                guard let device = devices[path], isOfInterest(device) else { continue }
                announced.insert(path)
                restart.append(.deviceAdvertised(device))
            }
            restart.append(.serviceAppeared)
        }
        events.reset(to: restart)
    }
}
