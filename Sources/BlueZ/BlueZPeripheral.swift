import NIOConcurrencyHelpers

/// The peripheral role, for readersim: an LE advertisement registered with
/// `LEAdvertisingManager1` and a GATT application (one service, one write + notify
/// characteristic) registered with `GattManager1`, both exported on our connection.
///
/// Object layout under `root` (e.g. `/org/accessd/readersim/reader0`):
/// `root/advertisement` (LEAdvertisement1), `root` (ObjectManager of the application),
/// `root/service0` (GattService1), `root/service0/char0` (GattCharacteristic1), with a hold
/// point `root/service0/char1` (a second, write-only characteristic) when one is asked for,
/// and while a presence advertisement runs `root/presence` (LEAdvertisement1, non-connectable).
public final class BlueZPeripheral: Sendable {
    public struct Advertisement: Sendable {
        /// 16-bit or 128-bit UUID string → bytes.
        public var serviceData: [String: [UInt8]]
        public var serviceUUIDs: [String]
        public var localName: String?
        /// Advertising interval; bluetoothd 5.66 honours it only with `-E` (experimental).
        public var intervalMilliseconds: UInt32?
        public var includeTxPower: Bool

        public init(
            serviceData: [String: [UInt8]], serviceUUIDs: [String] = [], localName: String? = nil,
            intervalMilliseconds: UInt32? = nil, includeTxPower: Bool = false
        ) {
            self.serviceData = serviceData
            self.serviceUUIDs = serviceUUIDs
            self.localName = localName
            self.intervalMilliseconds = intervalMilliseconds
            self.includeTxPower = includeTxPower
        }
    }

    /// A write from a central: its device path (from the `device` option) and the MTU when
    /// BlueZ reports it.
    public struct Write: Sendable {
        public var central: String?
        public var mtu: Int?
        public var value: [UInt8]
    }

    public let connection: DBusConnection
    public let adapter: String
    public let root: String
    public let serviceUUID: String
    public let characteristicUUID: String
    /// The second characteristic's UUID (write with response), if the peripheral has one.
    public let holdPointUUID: String?
    /// What the hold point reads as, when it can be read (version 3: the highest version the
    /// reader speaks); nil: write only, as a version 2 reader's.
    public let holdPointValue: [UInt8]?
    private let advertisement: Advertisement
    private let onWrite: @Sendable (Write) -> Void
    private let onHoldPointWrite: @Sendable (Write) -> Void
    private let onNotifyingChanged: @Sendable (Bool) -> Void
    private let state = NIOLockedValueBox<
        (notifying: Bool, value: [UInt8], registered: Bool, presence: Advertisement?)
    >(
        (false, [], false, nil))

    public var advertisementPath: String { root + "/advertisement" }
    public var presencePath: String { root + "/presence" }
    public var servicePath: String { root + "/service0" }
    public var characteristicPath: String { root + "/service0/char0" }
    public var holdPointPath: String { root + "/service0/char1" }

    public init(
        connection: DBusConnection, adapter: String, root: String, advertisement: Advertisement,
        serviceUUID: String, characteristicUUID: String, holdPointUUID: String? = nil,
        holdPointValue: [UInt8]? = nil,
        onNotifyingChanged: @escaping @Sendable (Bool) -> Void = { _ in },
        onHoldPointWrite: @escaping @Sendable (Write) -> Void = { _ in },
        onWrite: @escaping @Sendable (Write) -> Void
    ) {
        self.connection = connection
        self.adapter = adapter
        self.root = root
        self.advertisement = advertisement
        self.serviceUUID = serviceUUID.lowercased()
        self.characteristicUUID = characteristicUUID.lowercased()
        self.holdPointUUID = holdPointUUID?.lowercased()
        self.holdPointValue = holdPointValue
        self.onWrite = onWrite
        self.onHoldPointWrite = onHoldPointWrite
        self.onNotifyingChanged = onNotifyingChanged
    }

    /// Exports the objects and registers the application, then the advertisement.
    public func register() async throws(BlueZError) {
        do {
            try connection.export(path: root) { [weak self] in self?.handleApplication($0) }
            try connection.export(path: servicePath) { [weak self] in self?.handleService($0) }
            try connection.export(path: characteristicPath) { [weak self] in self?.handleCharacteristic($0) }
            if holdPointUUID != nil {
                try connection.export(path: holdPointPath) { [weak self] in self?.handleHoldPoint($0) }
            }
            try connection.export(path: advertisementPath) { [weak self] in self?.handleAdvertisement($0) }
        } catch {
            throw BlueZError(error)
        }
        var applicationRegistered = false
        do {
            _ = try await connection.call(
                destination: BlueZClient.service, path: adapter,
                interface: GattManager1.interface, method: "RegisterApplication",
                arguments: [.objectPath(root), .properties([:])])
            applicationRegistered = true
            _ = try await connection.call(
                destination: BlueZClient.service, path: adapter,
                interface: LEAdvertisingManager1.interface, method: "RegisterAdvertisement",
                arguments: [.objectPath(advertisementPath), .properties([:])])
        } catch {
            // All or nothing: an application left registered would make the next attempt
            // fail with AlreadyExists (seen when the advertisement was refused by an adapter
            // that bluetoothd had not finished powering).
            if applicationRegistered { await unregisterApplication() }
            await unregister()
            throw BlueZError(error)
        }
        state.withLockedValue { $0.registered = true }
    }

    /// Unregisters from BlueZ (best effort: bluetoothd may be gone) and unexports everything.
    public func unregister() async {
        let wasRegistered = state.withLockedValue { state in
            defer { state.registered = false }
            return state.registered
        }
        await stopPresence()
        if wasRegistered {
            _ = try? await connection.call(
                destination: BlueZClient.service, path: adapter,
                interface: LEAdvertisingManager1.interface, method: "UnregisterAdvertisement",
                arguments: [.objectPath(advertisementPath)])
            await unregisterApplication()
        }
        for path in [advertisementPath, characteristicPath, holdPointPath, servicePath, root] {
            connection.unexport(path: path)
        }
    }

    private func unregisterApplication() async {
        _ = try? await connection.call(
            destination: BlueZClient.service, path: adapter,
            interface: GattManager1.interface, method: "UnregisterApplication",
            arguments: [.objectPath(root)])
    }

    /// Stops advertising but keeps the GATT service (a reader that goes quiet).
    public func stopAdvertising() async {
        _ = try? await connection.call(
            destination: BlueZClient.service, path: adapter,
            interface: LEAdvertisingManager1.interface, method: "UnregisterAdvertisement",
            arguments: [.objectPath(advertisementPath)])
        await stopPresence()
    }

    /// Starts a second, non-connectable ("broadcast") advertisement beside the connectable
    /// one: a controller stops the connectable set while a central is connected, and this
    /// one keeps telling scanners how near the peripheral is. bluetoothd gives it an
    /// address of its own (a random one).
    public func startPresence(_ presence: Advertisement) async throws(BlueZError) {
        let started = state.withLockedValue { state in
            defer { state.presence = presence }
            return state.presence != nil
        }
        guard !started else { return }
        do {
            connection.unexport(path: presencePath)  // left exported when bluetoothd released it
            try connection.export(path: presencePath) { [weak self] in self?.handlePresence($0) }
            _ = try await connection.call(
                destination: BlueZClient.service, path: adapter,
                interface: LEAdvertisingManager1.interface, method: "RegisterAdvertisement",
                arguments: [.objectPath(presencePath), .properties([:])])
        } catch {
            state.withLockedValue { $0.presence = nil }
            connection.unexport(path: presencePath)
            throw BlueZError(error)
        }
    }

    /// Stops the presence advertisement, if one runs.
    public func stopPresence() async {
        guard
            state.withLockedValue({ state in
                defer { state.presence = nil }
                return state.presence != nil
            })
        else { return }
        _ = try? await connection.call(
            destination: BlueZClient.service, path: adapter,
            interface: LEAdvertisingManager1.interface, method: "UnregisterAdvertisement",
            arguments: [.objectPath(presencePath)])
        connection.unexport(path: presencePath)
    }

    /// Sends a notification to subscribed centrals: a PropertiesChanged of `Value`.
    public func notify(_ value: [UInt8]) throws(BlueZError) {
        let notifying = state.withLockedValue { state in
            state.value = value
            return state.notifying
        }
        guard notifying else { throw .notReady }
        do {
            try connection.emitSignal(
                path: characteristicPath, interface: DBusProperties.interface,
                name: "PropertiesChanged",
                arguments: [
                    .string(GattCharacteristic1.interface),
                    .properties(["Value": .bytes(value)]), .strings([]),
                ])
        } catch {
            throw BlueZError(error)
        }
    }

    public var isNotifying: Bool { state.withLockedValue { $0.notifying } }

    // MARK: Properties of each object

    var advertisementProperties: [String: DBusValue] {
        Self.properties(of: advertisement, type: "peripheral")
    }

    static func properties(of advertisement: Advertisement, type: String) -> [String: DBusValue] {
        var values: [String: DBusValue] = [
            "Type": .string(type),
            "ServiceData": .dictionary(
                keySignature: "s", valueSignature: "v",
                advertisement.serviceData.sorted { $0.key < $1.key }
                    .map { .init(.string($0.key), .variant(.bytes($0.value))) }),
        ]
        if !advertisement.serviceUUIDs.isEmpty { values["ServiceUUIDs"] = .strings(advertisement.serviceUUIDs) }
        if let name = advertisement.localName { values["LocalName"] = .string(name) }
        if let interval = advertisement.intervalMilliseconds {
            values["MinInterval"] = .uint32(interval)
            values["MaxInterval"] = .uint32(interval)
        }
        if advertisement.includeTxPower { values["Includes"] = .strings(["tx-power"]) }
        return values
    }

    var serviceProperties: [String: DBusValue] {
        let characteristics = [characteristicPath] + (holdPointUUID == nil ? [] : [holdPointPath])
        return [
            "UUID": .string(serviceUUID), "Primary": .bool(true),
            "Characteristics": .array(elementSignature: "o", characteristics.map { .objectPath($0) }),
        ]
    }

    var holdPointProperties: [String: DBusValue] {
        [
            "UUID": .string(holdPointUUID ?? ""), "Service": .objectPath(servicePath),
            "Flags": .strings(holdPointValue == nil ? ["write"] : ["read", "write"]),
        ]
    }

    var characteristicProperties: [String: DBusValue] {
        let (notifying, value) = state.withLockedValue { ($0.notifying, $0.value) }
        return [
            "UUID": .string(characteristicUUID), "Service": .objectPath(servicePath),
            "Flags": .strings(["write", "notify"]), "Notifying": .bool(notifying), "Value": .bytes(value),
        ]
    }

    // MARK: Method calls (bus thread: quick, no waiting)

    private func handleApplication(_ call: DBusMessage) {
        switch (call.interface, call.member) {
        case (DBusObjectManager.interface, "GetManagedObjects"):
            var objects: [(String, String, [String: DBusValue])] = [
                (servicePath, GattService1.interface, serviceProperties),
                (characteristicPath, GattCharacteristic1.interface, characteristicProperties),
            ]
            if holdPointUUID != nil {
                objects.append((holdPointPath, GattCharacteristic1.interface, holdPointProperties))
            }
            let value = DBusValue.dictionary(
                keySignature: "o", valueSignature: "a{sa{sv}}",
                objects.map { path, interface, properties in
                    .init(
                        .objectPath(path),
                        .dictionary(
                            keySignature: "s", valueSignature: "a{sv}",
                            [.init(.string(interface), .properties(properties))]))
                })
            try? connection.reply(to: call, with: [value])
        default:
            unknown(call)
        }
    }

    private func handleService(_ call: DBusMessage) {
        properties(call, interface: GattService1.interface, values: serviceProperties)
    }

    private func handleAdvertisement(_ call: DBusMessage) {
        if call.interface == LEAdvertisement1.interface, call.member == "Release" {
            // bluetoothd dropped the advertisement (adapter gone or powered off).
            state.withLockedValue { $0.registered = false }
            try? connection.reply(to: call)
            return
        }
        properties(call, interface: LEAdvertisement1.interface, values: advertisementProperties)
    }

    private func handlePresence(_ call: DBusMessage) {
        if call.interface == LEAdvertisement1.interface, call.member == "Release" {
            state.withLockedValue { $0.presence = nil }
            try? connection.reply(to: call)
            return
        }
        let presence = state.withLockedValue { $0.presence }
        properties(
            call, interface: LEAdvertisement1.interface,
            values: presence.map { Self.properties(of: $0, type: "broadcast") } ?? [:])
    }

    private func handleCharacteristic(_ call: DBusMessage) {
        guard call.interface == GattCharacteristic1.interface else {
            properties(call, interface: GattCharacteristic1.interface, values: characteristicProperties)
            return
        }
        switch call.member {
        case "WriteValue":
            guard call.arguments.count == 2, let value = call.arguments[0].bytes else {
                try? connection.replyError(
                    to: call, name: "org.bluez.Error.InvalidArguments", message: "expected ay a{sv}")
                return
            }
            let options = call.arguments[1].stringKeyed ?? [:]
            try? connection.reply(to: call)
            onWrite(Write(central: options["device"]?.string, mtu: options["mtu"]?.integer, value: value))
        case "ReadValue":
            try? connection.reply(to: call, with: [.bytes(state.withLockedValue { $0.value })])
        case "StartNotify":
            state.withLockedValue { $0.notifying = true }
            try? connection.reply(to: call)
            onNotifyingChanged(true)
        case "StopNotify":
            // bluetoothd also calls this when the subscribed central disconnects.
            state.withLockedValue { $0.notifying = false }
            try? connection.reply(to: call)
            onNotifyingChanged(false)
        default:
            unknown(call)
        }
    }

    private func handleHoldPoint(_ call: DBusMessage) {
        guard call.interface == GattCharacteristic1.interface else {
            properties(call, interface: GattCharacteristic1.interface, values: holdPointProperties)
            return
        }
        if call.member == "ReadValue", let holdPointValue {
            try? connection.reply(to: call, with: [.bytes(holdPointValue)])
            return
        }
        guard call.member == "WriteValue" else { return unknown(call) }
        guard call.arguments.count == 2, let value = call.arguments[0].bytes else {
            try? connection.replyError(to: call, name: "org.bluez.Error.InvalidArguments", message: "expected ay a{sv}")
            return
        }
        let options = call.arguments[1].stringKeyed ?? [:]
        try? connection.reply(to: call)
        onHoldPointWrite(Write(central: options["device"]?.string, mtu: options["mtu"]?.integer, value: value))
    }

    private func properties(_ call: DBusMessage, interface: String, values: [String: DBusValue]) {
        guard call.interface == DBusProperties.interface else { return unknown(call) }
        switch call.member {
        case "GetAll":
            guard call.arguments.first?.string == interface else {
                try? connection.reply(to: call, with: [.properties([:])])
                return
            }
            try? connection.reply(to: call, with: [.properties(values)])
        case "Get":
            guard call.arguments.count == 2, call.arguments[0].string == interface,
                let name = call.arguments[1].string, let value = values[name]
            else {
                try? connection.replyError(
                    to: call, name: "org.freedesktop.DBus.Error.InvalidArgs", message: "no such property")
                return
            }
            try? connection.reply(to: call, with: [.variant(value)])
        default:
            unknown(call)
        }
    }

    private func unknown(_ call: DBusMessage) {
        try? connection.replyError(
            to: call, name: "org.freedesktop.DBus.Error.UnknownMethod",
            message: "\(call.interface ?? "").\(call.member ?? "") not handled here")
    }
}
