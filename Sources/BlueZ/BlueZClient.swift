import NIOConcurrencyHelpers

/// accessd's view of bluetoothd: a mirror of the `org.bluez` object tree kept current from
/// ObjectManager and PropertiesChanged signals, the events it derives, and the calls the
/// daemon makes (discovery, power, connect; the calls live beside their interface in
/// `Interfaces/`).
///
/// bluetoothd may restart at any time. The client follows `org.bluez`'s owner
/// (NameOwnerChanged): when it leaves, every adapter and device is reported gone and
/// `serviceVanished` follows; when it comes back, the tree is read again
/// (GetManagedObjects) and reported, then `serviceAppeared`. Signals from any other sender
/// are ignored, so a stale or impostor peer cannot inject devices. When signals arrive
/// faster than the client takes them and some are dropped, the tree is read again the same
/// way (without `serviceAppeared`), so nothing the lost signals said is missed for long.
public actor BlueZClient: BluetoothCentral {
    public static let service = "org.bluez"

    public nonisolated let connection: DBusConnection
    /// Events in the order BlueZ produced them, a device's advertisements merged while they
    /// wait (`CoalescingQueue`). One consumer (the daemon).
    public nonisolated let events: CoalescingQueue<BlueZEvent>
    /// Service data UUIDs whose devices are reported advertising; nil: every device.
    let advertisementsOf: Set<String>?
    /// Devices whose advertisements were reported: only their removal is reported.
    var announced: Set<String> = []
    /// Times the event queue filled and the consumer was started over (diagnostics, tests).
    public internal(set) var eventResets = 0
    private let signalBufferLimit: Int
    private nonisolated let failures = NIOLockedValueBox<[String: Int]>([:])

    private var owner: String?
    public private(set) var adapters: [String: AdapterState] = [:]
    public private(set) var devices: [String: DeviceState] = [:]
    public private(set) var gattServices: [String: GattServiceState] = [:]
    public private(set) var gattCharacteristics: [String: GattCharacteristicState] = [:]
    private var signalTask: Task<Void, Never>?
    var notificationSubscribers: [String: [UInt64: AsyncStream<[UInt8]>.Continuation]] = [:]
    var resolvedWaiters: [String: [UInt64: ResolutionWaiter]] = [:]
    var nextWaiter: UInt64 = 0
    /// Signal overflows answered with a resynchronisation (diagnostics, tests).
    public private(set) var overflowResyncs = 0
    /// The serial of bluetoothd's last GetManagedObjects reply: its signals numbered below
    /// it were sent before that snapshot, and would only take the mirror back in time.
    private var snapshotSerial: UInt32?

    /// `signalBufferLimit`: signals that may wait for this client before some are dropped
    /// and the tree is read again (small in tests, to provoke it).
    /// `eventCapacity`: events that may wait for the consumer (a device's advertisements
    /// count once) before it is started over (`startOver`). `advertisementsOf`: only devices
    /// carrying service data under one of these UUIDs are reported advertising (and removed);
    /// any other advertisement is one `othersHeard`, however many came (a lobby's phones).
    public init(
        connection: DBusConnection, signalBufferLimit: Int = 4096, eventCapacity: Int = 16_384,
        advertisementsOf: Set<String>? = nil
    ) {
        self.connection = connection
        self.signalBufferLimit = signalBufferLimit
        self.advertisementsOf = advertisementsOf
        events = CoalescingQueue(capacity: eventCapacity)
    }

    /// Whether bluetoothd is on the bus (as last seen).
    public var isServicePresent: Bool { owner != nil }

    /// Subscribes to BlueZ's signals, then reads the tree if bluetoothd is there. Events for
    /// what exists already are reported before this returns.
    public func start() async throws(BlueZError) {
        guard signalTask == nil else { return }
        let rules = [
            DBusMatchRule(
                sender: DBusDaemon.service, interface: DBusDaemon.interface, member: "NameOwnerChanged",
                arg0: Self.service),
            DBusMatchRule(sender: Self.service, interface: DBusObjectManager.interface),
            DBusMatchRule(
                sender: Self.service, interface: DBusProperties.interface, member: "PropertiesChanged",
                pathNamespace: "/org/bluez"),
        ]
        let signals: DBusSignalStream
        do {
            signals = try await connection.signals(matching: rules, bufferLimit: signalBufferLimit)
        } catch {
            throw BlueZError(error)
        }
        signalTask = Task { [weak self] in
            for await signal in signals {
                guard let self else { return }
                switch signal {
                case .message(let message): await self.handle(message)
                case .overflow: await self.overflowed()
                }
            }
        }
        if let current = await currentOwner() {
            owner = current
            await resynchronise(announce: true)
        }
    }

    /// Stops following BlueZ and finishes the event stream.
    public func stop() {
        signalTask?.cancel()
        signalTask = nil
        events.finish()
    }

    private func currentOwner() async -> String? {
        let reply = try? await connection.call(
            destination: DBusDaemon.service, path: DBusDaemon.path,
            interface: DBusDaemon.interface, method: "GetNameOwner",
            arguments: [.string(Self.service)])
        return reply?.first?.string
    }

    // MARK: Signals

    private func handle(_ message: DBusMessage) async {
        if let snapshotSerial, message.sender == owner, message.serial < snapshotSerial { return }
        switch (message.interface, message.member) {
        case (DBusDaemon.interface, "NameOwnerChanged"):
            guard message.arguments.count == 3, message.arguments[0].string == Self.service else { return }
            let previous = message.arguments[1].string ?? ""
            let next = message.arguments[2].string ?? ""
            if !previous.isEmpty, previous == owner { vanish() }
            if !next.isEmpty {
                owner = next
                await resynchronise(announce: true)
            }
        case (DBusObjectManager.interface, "InterfacesAdded"):
            guard message.sender == owner, message.arguments.count == 2, let path = message.arguments[0].string,
                let interfaces = message.arguments[1].stringKeyed
            else { return }
            add(path: path, interfaces: interfaces)
        case (DBusObjectManager.interface, "InterfacesRemoved"):
            guard message.sender == owner, message.arguments.count == 2, let path = message.arguments[0].string,
                let interfaces = message.arguments[1].strings
            else { return }
            remove(path: path, interfaces: interfaces)
        case (DBusProperties.interface, "PropertiesChanged"):
            guard message.sender == owner, message.arguments.count >= 2, let path = message.path,
                let interface = message.arguments[0].string, let changed = message.arguments[1].stringKeyed
            else { return }
            let invalidated = message.arguments.count > 2 ? (message.arguments[2].strings ?? []) : []
            propertiesChanged(path: path, interface: interface, changed: changed, invalidated: invalidated)
        default:
            return
        }
    }

    /// Some signals were dropped: what they said (a device gone, a disconnection) is read
    /// back from the tree.
    private func overflowed() async {
        overflowResyncs += 1
        guard owner != nil else { return }
        await resynchronise(announce: false)
    }

    private func add(path: String, interfaces: [String: DBusValue]) {
        if let properties = interfaces[Adapter1.interface]?.stringKeyed {
            let adapter = AdapterState(path: path, properties: properties)
            let known = adapters[path] != nil
            adapters[path] = adapter
            post(known ? .adapterChanged(adapter) : .adapterAdded(adapter))
        }
        if let properties = interfaces[Device1.interface]?.stringKeyed {
            let device = DeviceState(path: path, properties: properties)
            let before = devices[path]
            devices[path] = device
            advertised(device)
            // Read again after lost signals: a link that changed meanwhile is reported.
            if let before, before.connected != device.connected || before.servicesResolved != device.servicesResolved {
                connectionChanged(device)
                if !device.connected { wakeResolvedWaiters(device: path, .disconnected) }
            }
            if device.servicesResolved { wakeResolvedWaiters(device: path, .resolved) }
        }
        if let properties = interfaces[GattService1.interface]?.stringKeyed {
            let service = GattServiceState(path: path, properties: properties)
            gattServices[path] = service
            wakeResolvedWaiters(device: service.devicePath, .gattChanged)
        }
        if let properties = interfaces[GattCharacteristic1.interface]?.stringKeyed {
            gattCharacteristics[path] = GattCharacteristicState(path: path, properties: properties)
            // Below its device's path; only devices someone waits for are looked at.
            for device in resolvedWaiters.keys where path.hasPrefix(device + "/") {
                wakeResolvedWaiters(device: device, .gattChanged)
            }
        }
    }

    private func remove(path: String, interfaces: [String]) {
        if interfaces.contains(GattCharacteristic1.interface), gattCharacteristics.removeValue(forKey: path) != nil {
            finishNotifications(path)
        }
        if interfaces.contains(GattService1.interface) { gattServices[path] = nil }
        if interfaces.contains(Device1.interface), devices.removeValue(forKey: path) != nil {
            forgetGatt(below: path)
            wakeResolvedWaiters(device: path, .vanished)
            removed(path)
        }
        if interfaces.contains(Adapter1.interface), adapters.removeValue(forKey: path) != nil {
            // bluetoothd does not always remove an adapter's devices first (dbusmock's
            // template reproduces this): they go with it.
            for devicePath in devices.keys.sorted() where devices[devicePath]?.adapterPath == path {
                devices[devicePath] = nil
                forgetGatt(below: devicePath)
                wakeResolvedWaiters(device: devicePath, .vanished)
                removed(devicePath)
            }
            post(.adapterRemoved(path: path))
        }
    }

    private func propertiesChanged(path: String, interface: String, changed: [String: DBusValue], invalidated: [String])
    {
        switch interface {
        case Adapter1.interface:
            guard var adapter = adapters[path] else { return }
            adapter.apply(changed)
            adapters[path] = adapter
            post(.adapterChanged(adapter))
        case Device1.interface:
            guard var device = devices[path] else { return }
            let before = device
            let advertised = device.apply(changed, invalidated: invalidated)
            devices[path] = device
            if advertised { self.advertised(device) }
            // Only a Connected=false that bluetoothd sent is a disconnection: BlueZ 5.66 can
            // connect without ever signalling Connected=true (see DeviceState.apply), so a
            // device still marked disconnected here may well be connected.
            let disconnected = changed["Connected"]?.bool == false
            if before.connected != device.connected || before.servicesResolved != device.servicesResolved
                || disconnected
            {
                connectionChanged(device)
            }
            // A disconnection first: a ServicesResolved left true beside it is no resolution.
            if disconnected {
                wakeResolvedWaiters(device: path, .disconnected)
            } else if device.servicesResolved {
                wakeResolvedWaiters(device: path, .resolved)
            }
        case GattCharacteristic1.interface:
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
        snapshotSerial = nil
        for path in Array(notificationSubscribers.keys) { finishNotifications(path) }
        for path in Array(resolvedWaiters.keys) { wakeResolvedWaiters(device: path, .vanished) }
        gattServices.removeAll()
        gattCharacteristics.removeAll()
        for path in devices.keys.sorted() { removed(path) }
        for path in adapters.keys.sorted() { post(.adapterRemoved(path: path)) }
        devices.removeAll()
        adapters.removeAll()
        post(.serviceVanished)
    }

    /// Reads the whole tree and reports it. Objects that disappeared meanwhile (while
    /// bluetoothd was away, or in signals lost to an overflow) are reported removed; a crash
    /// that lost its adapters cannot leave stale ones. `announce`: report `serviceAppeared`.
    private func resynchronise(announce: Bool) async {
        let expectedOwner = owner
        let reply: DBusConnection.Reply
        do {
            reply = try await connection.callForReply(
                destination: Self.service, path: "/",
                interface: DBusObjectManager.interface, method: "GetManagedObjects")
        } catch {
            return  // bluetoothd went away again: NameOwnerChanged will say so
        }
        guard owner == expectedOwner, let objects = reply.arguments.first?.stringKeyed else { return }
        snapshotSerial = reply.serial
        for path in gattCharacteristics.keys.sorted()
        where objects[path]?.stringKeyed?[GattCharacteristic1.interface] == nil {
            remove(path: path, interfaces: [GattCharacteristic1.interface])
        }
        for path in gattServices.keys.sorted() where objects[path]?.stringKeyed?[GattService1.interface] == nil {
            remove(path: path, interfaces: [GattService1.interface])
        }
        for path in devices.keys.sorted() where objects[path]?.stringKeyed?[Device1.interface] == nil {
            remove(path: path, interfaces: [Device1.interface])
        }
        for path in adapters.keys.sorted() where objects[path]?.stringKeyed?[Adapter1.interface] == nil {
            remove(path: path, interfaces: [Adapter1.interface])
        }
        // Adapters first, so that a device's adapter is known when the device is reported.
        let ordered = objects.keys.sorted {
            ($0.split(separator: "/").count, $0) < ($1.split(separator: "/").count, $1)
        }
        for path in ordered {
            if let interfaces = objects[path]?.stringKeyed { add(path: path, interfaces: interfaces) }
        }
        if announce { post(.serviceAppeared) }
    }

    // MARK: Calls

    nonisolated func call(
        _ path: String, _ interface: String, _ method: String, _ arguments: [DBusValue] = [],
        timeout: Duration = .seconds(25)
    ) async throws(BlueZError) -> [DBusValue] {
        do {
            return try await connection.call(
                destination: Self.service, path: path, interface: interface,
                method: method, arguments: arguments, timeout: timeout)
        } catch {
            let failure = BlueZError(error)
            failures.withLockedValue { $0[failure.code, default: 0] += 1 }
            throw failure
        }
    }

    /// BlueZ calls that failed since start, by `BlueZError.code` (the metrics' failure classes).
    public nonisolated var callFailures: [String: Int] { failures.withLockedValue { $0 } }

    private func forgetGatt(below devicePath: String) {
        let prefix = devicePath + "/"
        for path in gattCharacteristics.keys where path.hasPrefix(prefix) {
            gattCharacteristics[path] = nil
            finishNotifications(path)
        }
        for path in gattServices.keys where path.hasPrefix(prefix) { gattServices[path] = nil }
    }

    func finishNotifications(_ path: String) {
        guard let subscribers = notificationSubscribers.removeValue(forKey: path) else { return }
        for subscriber in subscribers.values { subscriber.finish() }
    }
}
