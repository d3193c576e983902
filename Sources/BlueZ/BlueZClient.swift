/// accessd's view of bluetoothd: a mirror of the `org.bluez` object tree kept current from
/// ObjectManager and PropertiesChanged signals, the events it derives, and the calls the
/// daemon makes (discovery, power, connect).
///
/// bluetoothd may restart at any time. The client follows `org.bluez`'s owner
/// (NameOwnerChanged): when it leaves, every adapter and device is reported gone and
/// `serviceVanished` follows; when it comes back, the tree is read again
/// (GetManagedObjects) and reported, then `serviceAppeared`. Signals from any other sender
/// are ignored, so a stale or impostor peer cannot inject devices.
public actor BlueZClient {
    public static let service = "org.bluez"

    public nonisolated let connection: DBusConnection
    /// Events in the order BlueZ produced them. One consumer (the daemon).
    public nonisolated let events: AsyncStream<BlueZEvent>
    private let continuation: AsyncStream<BlueZEvent>.Continuation

    private var owner: String?
    public private(set) var adapters: [String: AdapterState] = [:]
    public private(set) var devices: [String: DeviceState] = [:]
    public private(set) var gattServices: [String: GattServiceState] = [:]
    public private(set) var gattCharacteristics: [String: GattCharacteristicState] = [:]
    private var signalTask: Task<Void, Never>?
    private var notificationSubscribers: [String: [UInt64: AsyncStream<[UInt8]>.Continuation]] = [:]
    private var resolvedWaiters: [String: [UInt64: CheckedContinuation<ResolutionEnd, Never>]] = [:]
    private var nextWaiter: UInt64 = 0

    public init(connection: DBusConnection) {
        self.connection = connection
        (events, continuation) = AsyncStream<BlueZEvent>.makeStream()
    }

    /// Whether bluetoothd is on the bus (as last seen).
    public var isServicePresent: Bool { owner != nil }

    /// Subscribes to BlueZ's signals, then reads the tree if bluetoothd is there. Events for
    /// what exists already are reported before this returns.
    public func start() async throws(BlueZError) {
        guard signalTask == nil else { return }
        let rules = [
            DBusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                          arg0: Self.service),
            DBusMatchRule(sender: Self.service, interface: "org.freedesktop.DBus.ObjectManager"),
            DBusMatchRule(sender: Self.service, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                          pathNamespace: "/org/bluez"),
        ]
        let signals: AsyncStream<DBusMessage>
        do {
            signals = try await connection.signals(matching: rules)
        } catch {
            throw BlueZError(error)
        }
        signalTask = Task { [weak self] in
            for await message in signals {
                guard let self else { return }
                await self.handle(message)
            }
        }
        if let current = await currentOwner() {
            owner = current
            await resynchronise()
        }
    }

    /// Stops following BlueZ and finishes the event stream.
    public func stop() {
        signalTask?.cancel()
        signalTask = nil
        continuation.finish()
    }

    private func currentOwner() async -> String? {
        let reply = try? await connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                               interface: "org.freedesktop.DBus", method: "GetNameOwner",
                                               arguments: [.string(Self.service)])
        return reply?.first?.string
    }

    // MARK: Signals

    private func handle(_ message: DBusMessage) async {
        switch (message.interface, message.member) {
        case ("org.freedesktop.DBus", "NameOwnerChanged"):
            guard message.arguments.count == 3, message.arguments[0].string == Self.service else { return }
            let previous = message.arguments[1].string ?? "", next = message.arguments[2].string ?? ""
            if !previous.isEmpty, previous == owner { vanish() }
            if !next.isEmpty {
                owner = next
                await resynchronise()
            }
        case ("org.freedesktop.DBus.ObjectManager", "InterfacesAdded"):
            guard message.sender == owner, message.arguments.count == 2, let path = message.arguments[0].string,
                  let interfaces = message.arguments[1].stringKeyed else { return }
            add(path: path, interfaces: interfaces)
        case ("org.freedesktop.DBus.ObjectManager", "InterfacesRemoved"):
            guard message.sender == owner, message.arguments.count == 2, let path = message.arguments[0].string,
                  let interfaces = message.arguments[1].strings else { return }
            remove(path: path, interfaces: interfaces)
        case ("org.freedesktop.DBus.Properties", "PropertiesChanged"):
            guard message.sender == owner, message.arguments.count >= 2, let path = message.path,
                  let interface = message.arguments[0].string, let changed = message.arguments[1].stringKeyed
            else { return }
            let invalidated = message.arguments.count > 2 ? (message.arguments[2].strings ?? []) : []
            propertiesChanged(path: path, interface: interface, changed: changed, invalidated: invalidated)
        default:
            return
        }
    }

    private func add(path: String, interfaces: [String: DBusValue]) {
        if let properties = interfaces["org.bluez.Adapter1"]?.stringKeyed {
            let adapter = AdapterState(path: path, properties: properties)
            let known = adapters[path] != nil
            adapters[path] = adapter
            continuation.yield(known ? .adapterChanged(adapter) : .adapterAdded(adapter))
        }
        if let properties = interfaces["org.bluez.Device1"]?.stringKeyed {
            let device = DeviceState(path: path, properties: properties)
            devices[path] = device
            continuation.yield(.deviceAdvertised(device))
            if device.servicesResolved { wakeResolvedWaiters(device: path, .resolved) }
        }
        if let properties = interfaces["org.bluez.GattService1"]?.stringKeyed {
            gattServices[path] = GattServiceState(path: path, properties: properties)
        }
        if let properties = interfaces["org.bluez.GattCharacteristic1"]?.stringKeyed {
            gattCharacteristics[path] = GattCharacteristicState(path: path, properties: properties)
        }
    }

    private func remove(path: String, interfaces: [String]) {
        if interfaces.contains("org.bluez.GattCharacteristic1"), gattCharacteristics.removeValue(forKey: path) != nil {
            finishNotifications(path)
        }
        if interfaces.contains("org.bluez.GattService1") { gattServices[path] = nil }
        if interfaces.contains("org.bluez.Device1"), devices.removeValue(forKey: path) != nil {
            forgetGatt(below: path)
            wakeResolvedWaiters(device: path, .vanished)
            continuation.yield(.deviceRemoved(path: path))
        }
        if interfaces.contains("org.bluez.Adapter1"), adapters.removeValue(forKey: path) != nil {
            // bluetoothd does not always remove an adapter's devices first (dbusmock's
            // template reproduces this): they go with it.
            for devicePath in devices.keys.sorted() where devices[devicePath]?.adapterPath == path {
                devices[devicePath] = nil
                forgetGatt(below: devicePath)
                wakeResolvedWaiters(device: devicePath, .vanished)
                continuation.yield(.deviceRemoved(path: devicePath))
            }
            continuation.yield(.adapterRemoved(path: path))
        }
    }

    private func propertiesChanged(path: String, interface: String, changed: [String: DBusValue], invalidated: [String]) {
        switch interface {
        case "org.bluez.Adapter1":
            guard var adapter = adapters[path] else { return }
            adapter.apply(changed)
            adapters[path] = adapter
            continuation.yield(.adapterChanged(adapter))
        case "org.bluez.Device1":
            guard var device = devices[path] else { return }
            let before = device
            let advertised = device.apply(changed, invalidated: invalidated)
            devices[path] = device
            if advertised { continuation.yield(.deviceAdvertised(device)) }
            // Only a Connected=false that bluetoothd sent is a disconnection: BlueZ 5.66 can
            // connect without ever signalling Connected=true (see DeviceState.apply), so a
            // device still marked disconnected here may well be connected.
            let disconnected = changed["Connected"]?.bool == false
            if before.connected != device.connected || before.servicesResolved != device.servicesResolved || disconnected {
                continuation.yield(.deviceConnectionChanged(device))
            }
            if device.servicesResolved { wakeResolvedWaiters(device: path, .resolved) }
            if disconnected { wakeResolvedWaiters(device: path, .disconnected) }
        case "org.bluez.GattCharacteristic1":
            guard var characteristic = gattCharacteristics[path] else { return }
            characteristic.apply(changed)
            gattCharacteristics[path] = characteristic
            if let value = changed["Value"]?.bytes {
                for subscriber in (notificationSubscribers[path] ?? [:]).values { subscriber.yield(value) }
            }
        default:
            return
        }
    }

    private func vanish() {
        owner = nil
        for path in Array(notificationSubscribers.keys) { finishNotifications(path) }
        for path in Array(resolvedWaiters.keys) { wakeResolvedWaiters(device: path, .vanished) }
        gattServices.removeAll()
        gattCharacteristics.removeAll()
        for path in devices.keys.sorted() { continuation.yield(.deviceRemoved(path: path)) }
        for path in adapters.keys.sorted() { continuation.yield(.adapterRemoved(path: path)) }
        devices.removeAll()
        adapters.removeAll()
        continuation.yield(.serviceVanished)
    }

    /// Reads the whole tree and reports it. Objects that disappeared while bluetoothd was
    /// away are reported removed; a crash that lost its adapters cannot leave stale ones.
    private func resynchronise() async {
        let expectedOwner = owner
        let reply: [DBusValue]
        do {
            reply = try await connection.call(destination: Self.service, path: "/",
                                              interface: "org.freedesktop.DBus.ObjectManager",
                                              method: "GetManagedObjects")
        } catch {
            return  // bluetoothd went away again: NameOwnerChanged will say so
        }
        guard owner == expectedOwner, let objects = reply.first?.stringKeyed else { return }
        for path in devices.keys.sorted() where objects[path]?.stringKeyed?["org.bluez.Device1"] == nil {
            remove(path: path, interfaces: ["org.bluez.Device1"])
        }
        for path in adapters.keys.sorted() where objects[path]?.stringKeyed?["org.bluez.Adapter1"] == nil {
            remove(path: path, interfaces: ["org.bluez.Adapter1"])
        }
        // Adapters first, so that a device's adapter is known when the device is reported.
        let ordered = objects.keys.sorted { ($0.split(separator: "/").count, $0) < ($1.split(separator: "/").count, $1) }
        for path in ordered {
            if let interfaces = objects[path]?.stringKeyed { add(path: path, interfaces: interfaces) }
        }
        continuation.yield(.serviceAppeared)
    }

    // MARK: Calls

    private nonisolated func call(_ path: String, _ interface: String, _ method: String, _ arguments: [DBusValue] = [],
                                  timeout: Duration = .seconds(25)) async throws(BlueZError) -> [DBusValue] {
        do {
            return try await connection.call(destination: Self.service, path: path, interface: interface,
                                             method: method, arguments: arguments, timeout: timeout)
        } catch {
            throw BlueZError(error)
        }
    }

    public nonisolated func setDiscoveryFilter(adapter: String, _ filter: DiscoveryFilter) async throws(BlueZError) {
        _ = try await call(adapter, "org.bluez.Adapter1", "SetDiscoveryFilter", [filter.dbusValue])
    }

    public nonisolated func startDiscovery(adapter: String) async throws(BlueZError) {
        _ = try await call(adapter, "org.bluez.Adapter1", "StartDiscovery")
    }

    public nonisolated func stopDiscovery(adapter: String) async throws(BlueZError) {
        _ = try await call(adapter, "org.bluez.Adapter1", "StopDiscovery")
    }

    public nonisolated func setPowered(adapter: String, _ powered: Bool) async throws(BlueZError) {
        _ = try await call(adapter, "org.freedesktop.DBus.Properties", "Set",
                           [.string("org.bluez.Adapter1"), .string("Powered"), .variant(.bool(powered))])
    }

    public nonisolated func connect(device: String, timeout: Duration = .seconds(10)) async throws(BlueZError) {
        _ = try await call(device, "org.bluez.Device1", "Connect", timeout: timeout)
    }

    public nonisolated func disconnect(device: String, timeout: Duration = .seconds(5)) async throws(BlueZError) {
        _ = try await call(device, "org.bluez.Device1", "Disconnect", timeout: timeout)
    }

    /// Forgets a device (bluetoothd drops its object and cache).
    public nonisolated func removeDevice(adapter: String, device: String) async throws(BlueZError) {
        _ = try await call(adapter, "org.bluez.Adapter1", "RemoveDevice", [.objectPath(device)])
    }

    // MARK: GATT client

    private func forgetGatt(below devicePath: String) {
        let prefix = devicePath + "/"
        for path in gattCharacteristics.keys where path.hasPrefix(prefix) {
            gattCharacteristics[path] = nil
            finishNotifications(path)
        }
        for path in gattServices.keys where path.hasPrefix(prefix) { gattServices[path] = nil }
    }

    /// How a wait for `ServicesResolved` ended.
    private enum ResolutionEnd {
        case resolved, disconnected, vanished, timedOut
    }

    private func wakeResolvedWaiters(device: String, _ end: ResolutionEnd) {
        guard let waiters = resolvedWaiters.removeValue(forKey: device) else { return }
        for waiter in waiters.values { waiter.resume(returning: end) }
    }

    private func finishNotifications(_ path: String) {
        guard let subscribers = notificationSubscribers.removeValue(forKey: path) else { return }
        for subscriber in subscribers.values { subscriber.finish() }
    }

    /// Connects and waits until BlueZ has resolved the device's GATT services.
    public func connectAndResolve(device: String, timeout: Duration = .seconds(10)) async throws(BlueZError) {
        let deadline = ContinuousClock.now + timeout
        try await connect(device: device, timeout: timeout)
        try await waitForServicesResolved(device: device, timeout: deadline - ContinuousClock.now)
    }

    /// Waits for `ServicesResolved` to become true. Fails with `.doesNotExist` when
    /// bluetoothd says the device disconnected (`Connected` false) or the device vanishes
    /// first, `.timeout` after `timeout`.
    public func waitForServicesResolved(device: String, timeout: Duration) async throws(BlueZError) {
        guard let state = devices[device] else { throw .doesNotExist }
        if state.servicesResolved { return }
        let id = nextWaiter
        nextWaiter += 1
        let timer = Task { [weak self] in
            try? await Task.sleep(for: max(timeout, .zero))
            await self?.expireWaiter(device: device, id: id)
        }
        let end = await withCheckedContinuation { continuation in
            resolvedWaiters[device, default: [:]][id] = continuation
        }
        timer.cancel()
        switch end {
        case .resolved: return
        case .timedOut: throw .timeout
        case .disconnected, .vanished: throw .doesNotExist
        }
    }

    /// How many callers wait for this device's services (for tests and diagnostics).
    public func resolutionWaiters(device: String) -> Int {
        resolvedWaiters[device]?.count ?? 0
    }

    private func expireWaiter(device: String, id: UInt64) {
        guard let waiter = resolvedWaiters[device]?.removeValue(forKey: id) else { return }
        waiter.resume(returning: .timedOut)
    }

    /// The path of a characteristic of a connected device, by service and characteristic UUID.
    public func characteristic(device: String, service: String, characteristic: String) -> GattCharacteristicState? {
        let serviceUUID = service.lowercased(), characteristicUUID = characteristic.lowercased()
        let services = Set(gattServices.values.filter { $0.devicePath == device && $0.uuid == serviceUUID }.map(\.path))
        return gattCharacteristics.values
            .filter { services.contains($0.servicePath) && $0.uuid == characteristicUUID }
            .min { $0.path < $1.path }
    }

    public nonisolated func readValue(characteristic: String, timeout: Duration = .seconds(5)) async throws(BlueZError) -> [UInt8] {
        let reply = try await call(characteristic, "org.bluez.GattCharacteristic1", "ReadValue", [.properties([:])],
                                   timeout: timeout)
        guard let value = reply.first?.bytes else { throw .invalidArguments("ReadValue returned \(reply)") }
        return value
    }

    public nonisolated func writeValue(characteristic: String, _ value: [UInt8], type: GattWriteType = .withResponse,
                                       timeout: Duration = .seconds(5)) async throws(BlueZError) {
        _ = try await call(characteristic, "org.bluez.GattCharacteristic1", "WriteValue",
                           [.bytes(value), .properties(["type": .string(type.rawValue)])], timeout: timeout)
    }

    /// Enables notifications and returns them as a stream, which ends when the
    /// characteristic (or its device, or bluetoothd) goes away. Subscribe before the peer
    /// can send: the stream exists before StartNotify is called.
    public func notifications(characteristic: String) async throws(BlueZError) -> AsyncStream<[UInt8]> {
        guard gattCharacteristics[characteristic] != nil else { throw .doesNotExist }
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let id = nextWaiter
        nextWaiter += 1
        notificationSubscribers[characteristic, default: [:]][id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.unsubscribe(characteristic: characteristic, id: id) }
        }
        do {
            _ = try await call(characteristic, "org.bluez.GattCharacteristic1", "StartNotify")
        } catch {
            notificationSubscribers[characteristic]?[id] = nil
            continuation.finish()
            throw error
        }
        return stream
    }

    private func unsubscribe(characteristic: String, id: UInt64) async {
        guard notificationSubscribers[characteristic]?.removeValue(forKey: id) != nil else { return }
        if notificationSubscribers[characteristic]?.isEmpty == true {
            notificationSubscribers[characteristic] = nil
            _ = try? await call(characteristic, "org.bluez.GattCharacteristic1", "StopNotify")
        }
    }
}
