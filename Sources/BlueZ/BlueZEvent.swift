/// What the client reports, in the order BlueZ said it.
public enum BlueZEvent: Hashable, Sendable {
    /// bluetoothd is on the bus and its object tree has been read.
    case serviceAppeared
    /// bluetoothd left the bus: every adapter and device is gone with it.
    case serviceVanished
    case adapterAdded(AdapterState)
    case adapterChanged(AdapterState)
    case adapterRemoved(path: String)
    /// A device was seen or advertised again (RSSI, service data, manufacturer data, name).
    case deviceAdvertised(DeviceState)
    /// Connection state of a device changed (`Connected`, `ServicesResolved`).
    case deviceConnectionChanged(DeviceState)
    case deviceRemoved(path: String)
    /// Devices that are not of interest advertised (`BlueZClient(advertisementsOf:)`): one
    /// event however many did, for a watchdog that only needs to know the radio hears.
    case othersHeard
}
