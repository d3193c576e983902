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
    private var signalTask: Task<Void, Never>?

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
        }
    }

    private func remove(path: String, interfaces: [String]) {
        if interfaces.contains("org.bluez.Device1"), devices.removeValue(forKey: path) != nil {
            continuation.yield(.deviceRemoved(path: path))
        }
        if interfaces.contains("org.bluez.Adapter1"), adapters.removeValue(forKey: path) != nil {
            // bluetoothd does not always remove an adapter's devices first (dbusmock's
            // template reproduces this): they go with it.
            for devicePath in devices.keys.sorted() where devices[devicePath]?.adapterPath == path {
                devices[devicePath] = nil
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
            if before.connected != device.connected || before.servicesResolved != device.servicesResolved {
                continuation.yield(.deviceConnectionChanged(device))
            }
        default:
            return
        }
    }

    private func vanish() {
        owner = nil
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
}
