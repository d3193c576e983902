/// What the daemon needs of a Bluetooth LE central: the adapters and devices BlueZ reports,
/// discovery, links, GATT services and the control point. `BlueZClient` is the real one, over
/// D-Bus; the test support's `FakeCentral` plays the same part in memory, with readers that
/// answer over their control point, so the daemon's services are tested without a bus.
///
/// Every call honours task cancellation (it ends with `.cancelled`), and every failure is a
/// `BlueZError` whatever the implementation.
public protocol BluetoothCentral: Sendable {
    /// Events in the order they happened, a device's advertisements merged while they wait.
    /// One consumer.
    var events: CoalescingQueue<BlueZEvent> { get }

    /// Starts following the Bluetooth service; what exists already is reported as events.
    func start() async throws(BlueZError)
    /// Whether bluetoothd is on the bus, as far as the central knows (after `start`: when it
    /// is, `serviceAppeared` is already queued).
    var isServicePresent: Bool { get async }

    func setDiscoveryFilter(adapter: String, _ filter: DiscoveryFilter) async throws(BlueZError)
    func startDiscovery(adapter: String) async throws(BlueZError)
    func stopDiscovery(adapter: String) async throws(BlueZError)
    /// `Adapter1.Powered`: the recovery ladder's power cycle (the kernel resets the
    /// controller when it powers it on).
    func setPowered(adapter: String, _ powered: Bool) async throws(BlueZError)

    func connect(device: String, timeout: Duration) async throws(BlueZError)
    func disconnect(device: String, timeout: Duration) async throws(BlueZError)
    /// Until the device's GATT services are resolved; `.doesNotExist` when it disconnects
    /// or vanishes first, `.timeout` after `timeout`.
    func waitForServicesResolved(device: String, timeout: Duration) async throws(BlueZError)
    /// A characteristic of a connected device, by service and characteristic UUID.
    func characteristic(device: String, service: String, characteristic: String) async -> GattCharacteristicState?
    /// A characteristic once the device's services are resolved, waiting until `timeout` for
    /// a resolution that is redone (BlueZClient explains when); nil when it did not appear.
    func resolvedCharacteristic(
        device: String, service: String, characteristic: String,
        timeout: Duration
    ) async throws(BlueZError) -> GattCharacteristicState?
    func writeValue(characteristic: String, _ value: [UInt8], type: GattWriteType, timeout: Duration)
        async throws(BlueZError)
    /// Notifications of a characteristic, until it (or its device, or the service) goes away.
    func notifications(characteristic: String) async throws(BlueZError) -> AsyncStream<[UInt8]>
}

extension BluetoothCentral {
    /// For a central whose resolution is final (an in-memory one): resolved, then looked up once.
    public func resolvedCharacteristic(
        device: String, service: String, characteristic: String,
        timeout: Duration
    ) async throws(BlueZError) -> GattCharacteristicState? {
        try await waitForServicesResolved(device: device, timeout: timeout)
        return await self.characteristic(device: device, service: service, characteristic: characteristic)
    }
}
