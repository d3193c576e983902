import BlueZ
import Foundation

/// What a fake device answers over its control point: the test support's stand-in for a
/// reader's GATT server. Called only from the fake central's actor, one call at a time.
public protocol FakePeripheral: AnyObject, Sendable {
    /// The central subscribed to notifications: what the peripheral sends first.
    func subscribed() -> [[UInt8]]
    /// The central wrote `value`: what the peripheral notifies in answer.
    func written(_ value: [UInt8]) -> [[UInt8]]
    /// The link went down.
    func disconnected()
    /// The UUIDs of its characteristics, the control point first and then any others (a
    /// reader's hold point): the fake central finds only these. Empty (the default): any
    /// characteristic asked for is the control point.
    var characteristics: [String] { get }
    /// The central wrote `value` to a characteristic other than the control point.
    func written(_ value: [UInt8], to characteristic: String)
    /// The GATT flags of a characteristic other than the control point (default: write).
    func flags(of characteristic: String) -> [String]
}

extension FakePeripheral {
    public var characteristics: [String] { [] }
    public func written(_ value: [UInt8], to characteristic: String) {}
    public func flags(of characteristic: String) -> [String] { ["write"] }
}

/// A `BluetoothCentral` in memory, for the daemon's services without a bus: adapters and
/// devices a test adds and moves (RSSI, service data), links that connect, resolve, drop or
/// hang as the test says, and a peripheral behind each device's control point. It reports
/// events as BlueZClient does, in the same order and with the same quirks it promises
/// (services resolved only on a link; a disconnection reported as `Connected` false).
public actor FakeCentral: BluetoothCentral {
    /// Every event, unmerged (tests count advertisements), in a queue as large as a test needs.
    public nonisolated let events = CoalescingQueue<BlueZEvent>(capacity: 1 << 20)

    /// How the next connection attempts to a device behave.
    public enum ConnectBehaviour: Sendable {
        case succeed
        case fail(BlueZError)
        /// Never answered until cancelled, timed out, or the service vanishes.
        case hang
    }

    private var present = true
    private var adapters: [String: AdapterState] = [:]
    private var devices: [String: DeviceState] = [:]
    private var peripherals: [String: any FakePeripheral] = [:]
    private var connectBehaviour: [String: ConnectBehaviour] = [:]
    private var hanging: [String: [CheckedContinuation<BlueZError?, Never>]] = [:]
    private var resolutionWaiters: [String: [CheckedContinuation<Bool, Never>]] = [:]
    private var notifications: [String: AsyncStream<[UInt8]>.Continuation] = [:]
    /// Every call the daemon made, as "Method path" (for tests).
    public private(set) var calls: [String] = []
    /// For each device, how many calls had been made when its last Connect was answered:
    /// a call at a lower index of `calls` came before that answer.
    public private(set) var connectAnswered: [String: Int] = [:]

    private var wedged: [String: Wedge] = [:]

    public init() {
    }

    // MARK: What the test does

    /// `roles`: `Adapter1.Roles` as BlueZ gives it (empty: a BR/EDR-only controller; nil:
    /// not given, as before BlueZ 5.48).
    public func addAdapter(_ name: String = "hci0", powered: Bool = true, roles: [String]? = ["central", "peripheral"])
    {
        var properties: [String: DBusValue] = ["Powered": .bool(powered), "Address": .string("00:AA:00:00:00:01")]
        if let roles { properties["Roles"] = .strings(roles) }
        let adapter = AdapterState(path: "/org/bluez/" + name, properties: properties)
        adapters[adapter.path] = adapter
        events.post(.adapterAdded(adapter))
    }

    /// The adapter unplugged: bluetoothd drops it and the devices heard on it.
    public func removeAdapter(_ name: String) {
        let path = "/org/bluez/" + name
        guard adapters.removeValue(forKey: path) != nil else { return }
        for device in devices.keys.sorted() where device.hasPrefix(path + "/") {
            devices[device] = nil
            events.post(.deviceRemoved(path: device))
        }
        events.post(.adapterRemoved(path: path))
    }

    /// The adapter powered on or off (off: BlueZ ends discovery).
    public func setPowered(_ name: String = "hci0", _ powered: Bool) {
        guard var adapter = adapters["/org/bluez/" + name] else { return }
        adapter.powered = powered
        if !powered { adapter.discovering = false }
        adapters[adapter.path] = adapter
        if powered, wedged[adapter.path] == .soft { wedged[adapter.path] = nil }
        events.post(.adapterChanged(adapter))
    }

    public enum Wedge: Sendable { case soft, hard }

    /// A stuck receiver, as the lab's `radioctl wedge`: nothing advertised on the adapter is
    /// reported until it is powered on again (`soft`), or until `unwedge` (`hard`).
    public func wedge(_ name: String = "hci0", _ kind: Wedge = .soft) {
        wedged["/org/bluez/" + name] = kind
    }

    public func unwedge(_ name: String = "hci0") {
        wedged["/org/bluez/" + name] = nil
    }

    /// A device heard advertising; again with new values to advertise again. Returns its path.
    @discardableResult
    public func advertise(
        address: String, adapter: String = "hci0", rssi: Int, serviceData: [String: [UInt8]],
        name: String? = nil
    ) -> String {
        let path = "/org/bluez/\(adapter)/dev_" + address.replacingOccurrences(of: ":", with: "_")
        var properties: [String: DBusValue] = [
            "Address": .string(address), "Adapter": .objectPath("/org/bluez/" + adapter), "RSSI": .int16(Int16(rssi)),
            "ServiceData": .properties(serviceData.mapValues { .bytes($0) }),
        ]
        if let name { properties["Name"] = .string(name) }
        var device = DeviceState(path: path, properties: properties)
        if let known = devices[path] {
            device.connected = known.connected
            device.servicesResolved = known.servicesResolved
        }
        devices[path] = device
        if wedged["/org/bluez/" + adapter] == nil { events.post(.deviceAdvertised(device)) }
        return path
    }

    /// What answers over `device`'s control point.
    public func attach(_ peripheral: any FakePeripheral, to device: String) { peripherals[device] = peripheral }

    public func setConnectBehaviour(_ behaviour: ConnectBehaviour, for device: String) {
        connectBehaviour[device] = behaviour
    }

    /// The peripheral (or the radio) drops the link.
    public func dropLink(_ device: String) {
        guard var state = devices[device], state.connected else { return }
        state.connected = false
        state.servicesResolved = false
        devices[device] = state
        peripherals[device]?.disconnected()
        events.post(.deviceConnectionChanged(state))
        wakeResolution(device, resolved: false)
    }

    /// bluetoothd forgets a device (a temporary one not heard for `TemporaryTimeout`, a phone
    /// that changed its address): `deviceRemoved`.
    public func forget(_ device: String) {
        guard devices.removeValue(forKey: device) != nil else { return }
        events.post(.deviceRemoved(path: device))
    }

    /// bluetoothd leaves the bus: everything it reported is gone, calls under way fail.
    public func vanish() {
        present = false
        for (device, waiters) in hanging {
            for waiter in waiters { waiter.resume(returning: .serviceUnknown) }
            hanging[device] = nil
        }
        for device in resolutionWaiters.keys { wakeResolution(device, resolved: false) }
        for (_, stream) in notifications { stream.finish() }
        notifications.removeAll()
        for path in devices.keys.sorted() { events.post(.deviceRemoved(path: path)) }
        for path in adapters.keys.sorted() { events.post(.adapterRemoved(path: path)) }
        devices.removeAll()
        adapters.removeAll()
        events.post(.serviceVanished)
    }

    /// bluetoothd is back with one powered adapter.
    public func reappear(adapter: String = "hci0") {
        present = true
        addAdapter(adapter)
        events.post(.serviceAppeared)
    }

    public func device(_ path: String) -> DeviceState? { devices[path] }

    public func callCount(_ prefix: String) -> Int { calls.filter { $0.hasPrefix(prefix) }.count }

    // MARK: BluetoothCentral

    public func start() async throws(BlueZError) {
        events.post(.serviceAppeared)
    }

    public var isServicePresent: Bool { present }

    public func setDiscoveryFilter(adapter: String, _ filter: DiscoveryFilter) async throws(BlueZError) {
        calls.append("SetDiscoveryFilter \(adapter)")
        guard present, adapters[adapter] != nil else { throw present ? .doesNotExist : .serviceUnknown }
    }

    public func startDiscovery(adapter: String) async throws(BlueZError) {
        calls.append("StartDiscovery \(adapter)")
        try setDiscovering(adapter, true)
    }

    public func stopDiscovery(adapter: String) async throws(BlueZError) {
        calls.append("StopDiscovery \(adapter)")
        try setDiscovering(adapter, false)
    }

    public func setPowered(adapter: String, _ powered: Bool) async throws(BlueZError) {
        calls.append("SetPowered \(adapter) \(powered)")
        guard present, adapters[adapter] != nil else { throw present ? .doesNotExist : .serviceUnknown }
        setPowered(String(adapter.split(separator: "/").last ?? ""), powered)
    }

    private func setDiscovering(_ adapter: String, _ on: Bool) throws(BlueZError) {
        guard present, var state = adapters[adapter] else { throw present ? .doesNotExist : .serviceUnknown }
        guard state.powered else { throw .notReady }
        state.discovering = on
        adapters[adapter] = state
        events.post(.adapterChanged(state))
    }

    public func connect(device: String, timeout: Duration) async throws(BlueZError) {
        calls.append("Connect \(device)")
        guard present else { throw .serviceUnknown }
        guard devices[device] != nil else { throw .doesNotExist }
        switch connectBehaviour[device] ?? .succeed {
        case .fail(let error):
            throw error
        case .hang:
            let failure = await withTaskCancellationHandler {
                await withCheckedContinuation { hanging[device, default: []].append($0) }
            } onCancel: {
                Task { await self.cancelHanging(device) }
            }
            if let failure { throw failure }
            connectedNow(device)
        case .succeed:
            connectedNow(device)
        }
    }

    /// Answers the Connects to `device` left hanging: the link comes up (later Connects succeed).
    public func answerConnect(_ device: String) {
        connectBehaviour[device] = .succeed
        for waiter in hanging.removeValue(forKey: device) ?? [] { waiter.resume(returning: nil) }
    }

    private func connectedNow(_ device: String) {
        connectAnswered[device] = calls.count
        guard var state = devices[device], !state.connected else { return }
        state.connected = true
        devices[device] = state
        events.post(.deviceConnectionChanged(state))
        state.servicesResolved = true
        devices[device] = state
        events.post(.deviceConnectionChanged(state))
        wakeResolution(device, resolved: true)
    }

    private func cancelHanging(_ device: String) {
        for waiter in hanging.removeValue(forKey: device) ?? [] { waiter.resume(returning: .cancelled) }
    }

    public func disconnect(device: String, timeout: Duration) async throws(BlueZError) {
        calls.append("Disconnect \(device)")
        guard present else { throw .serviceUnknown }
        dropLink(device)
    }

    public func waitForServicesResolved(device: String, timeout: Duration) async throws(BlueZError) {
        guard let state = devices[device] else { throw .doesNotExist }
        if state.servicesResolved { return }
        guard state.connected else { throw .doesNotExist }
        let resolved = await withCheckedContinuation { resolutionWaiters[device, default: []].append($0) }
        if !resolved { throw .doesNotExist }
    }

    private func wakeResolution(_ device: String, resolved: Bool) {
        for waiter in resolutionWaiters.removeValue(forKey: device) ?? [] { waiter.resume(returning: resolved) }
    }

    public func characteristic(device: String, service: String, characteristic: String) -> GattCharacteristicState? {
        guard devices[device]?.servicesResolved == true, let peripheral = peripherals[device] else { return nil }
        let offered = peripheral.characteristics
        if !offered.isEmpty {
            guard let index = offered.firstIndex(of: characteristic) else { return nil }
            if index > 0 {
                return GattCharacteristicState(
                    path: device + "/service0010/char\(String(format: "%04x", 0x20 + index))",
                    properties: [
                        "UUID": .string(characteristic), "Flags": .strings(peripheral.flags(of: characteristic)),
                        "Service": .objectPath(device + "/service0010"),
                    ])
            }
        }
        return GattCharacteristicState(
            path: device + "/service0010/char0011",
            properties: [
                "UUID": .string(characteristic), "Service": .objectPath(device + "/service0010"), "MTU": .uint16(185),
                "Flags": .strings(["write", "notify"]),
            ])
    }

    public func writeValue(
        characteristic: String, _ value: [UInt8], type: GattWriteType,
        timeout: Duration
    ) async throws(BlueZError) {
        let device = Self.device(of: characteristic)
        guard present, devices[device]?.connected == true, let peripheral = peripherals[device] else {
            throw .doesNotExist
        }
        calls.append("WriteValue \(characteristic)")
        if let index = Int(characteristic.suffix(4), radix: 16), index > 0x20,
            index - 0x20 < peripheral.characteristics.count
        {
            peripheral.written(value, to: peripheral.characteristics[index - 0x20])
            return
        }
        for fragment in peripheral.written(value) { notifications[characteristic]?.yield(fragment) }
    }

    public func notifications(characteristic: String) async throws(BlueZError) -> AsyncStream<[UInt8]> {
        let device = Self.device(of: characteristic)
        guard present, devices[device]?.connected == true, let peripheral = peripherals[device] else {
            throw .doesNotExist
        }
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream()
        notifications[characteristic]?.finish()
        notifications[characteristic] = continuation
        for fragment in peripheral.subscribed() { continuation.yield(fragment) }
        return stream
    }

    private static func device(of characteristic: String) -> String {
        characteristic.components(separatedBy: "/service").first ?? characteristic
    }
}
