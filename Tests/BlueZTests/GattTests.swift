import BlueZTestSupport
import Foundation
import SuiteTraits
import Testing

@testable import BlueZ

/// The GATT client against dbusmock extended with a reader's GATT objects, and the
/// peripheral role's registration and exported objects.
@Suite("GATT client and peripheral role", .threadOfItsOwn, .timeLimit(.minutes(5)))
final class GattTests: Sendable {
    let bus: PrivateBus
    let mock: BlueZMock
    let connection: DBusConnection
    let client: BlueZClient

    static let device = "/org/bluez/hci0/dev_00_BB_01_00_00_00"
    static let service = device + "/service0010"
    static let characteristic = service + "/char0011"
    static let serviceUUID = "6a4e0001-5c8d-4b7a-9f3e-2d1c0b8a7f60"
    static let characteristicUUID = "6a4e0002-5c8d-4b7a-9f3e-2d1c0b8a7f60"

    init() async throws {
        bus = try PrivateBus()
        mock = try await BlueZMock(bus: bus)
        try await mock.addAdapter("hci0")
        try await mock.addDevice("00:BB:01:00:00:00")
        connection = try DBusConnection(address: bus.address)
        client = BlueZClient(connection: connection)
        try await client.start()
    }

    deinit {
        connection.close()
    }

    /// What bluetoothd adds after service discovery: the reader's service and its control point.
    func addReaderGatt() async throws {
        try await addObject(
            Self.service, "org.bluez.GattService1",
            ["UUID": .string(Self.serviceUUID), "Device": .objectPath(Self.device), "Primary": .bool(true)],
            methods: [])
        try await addObject(
            Self.characteristic, "org.bluez.GattCharacteristic1",
            [
                "UUID": .string(Self.characteristicUUID), "Service": .objectPath(Self.service),
                "Flags": .strings(["write", "notify"]), "Notifying": .bool(false), "MTU": .uint16(185),
            ],
            methods: [
                ("ReadValue", "a{sv}", "ay", "ret = dbus.Array([dbus.Byte(c) for c in b'LOCKED'], signature='y')"),
                (
                    "WriteValue", "aya{sv}", "",
                    """
                    self.EmitSignal('org.freedesktop.DBus.Properties', 'PropertiesChanged', 'sa{sv}as', \
                    ['org.bluez.GattCharacteristic1', {'Value': dbus.Array([dbus.Byte(0x47)] + list(args[0]), \
                    signature='y', variant_level=1)}, []])
                    """
                ),
                ("StartNotify", "", "", ""),
                ("StopNotify", "", "", ""),
            ])
    }

    func addObject(
        _ path: String, _ interface: String, _ properties: [String: DBusValue],
        methods: [(String, String, String, String)]
    ) async throws {
        let methodValues = DBusValue.array(
            elementSignature: "(ssss)",
            methods.map {
                .structure([.string($0.0), .string($0.1), .string($0.2), .string($0.3)])
            })
        try await mock.mock(
            "AddObject", [.string(path), .string(interface), .properties(properties), methodValues],
            path: "/", interface: "org.freedesktop.DBus.Mock")
        // dbusmock's AddObject emits no InterfacesAdded (docs/bluez.md): emit it as bluetoothd would.
        let added = DBusValue.dictionary(
            keySignature: "s", valueSignature: "a{sv}",
            [.init(.string(interface), .properties(properties))])
        try await mock.mock(
            "EmitSignal",
            [
                .string("org.freedesktop.DBus.ObjectManager"), .string("InterfacesAdded"),
                .string("oa{sa{sv}}"),
                .array(elementSignature: "v", [.variant(.objectPath(path)), .variant(added)]),
            ],
            path: "/", interface: "org.freedesktop.DBus.Mock")
    }

    @Test func connectWaitsForServiceResolution() async throws {
        let waiting = Task { try await self.client.connectAndResolve(device: Self.device, timeout: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(100))
        try await mock.mock("ConnectDevice", [.string("hci0"), .string("00:BB:01:00:00:00")])
        try await mock.set(Self.device, "org.bluez.Device1", "ServicesResolved", .bool(true))
        try await waiting.value
    }

    /// BlueZ 5.66 may connect without signalling Connected=true (its ATT channel came up
    /// before the kernel's Device Connected event). Other properties change meanwhile (the
    /// GAP name it reads): that is no disconnection, and ServicesResolved then marks the
    /// device connected. Seen in the lab, where the wait used to end at the name change.
    @Test func resolutionSurvivesAConnectionNeverSignalled() async throws {
        let waiting = Task { try await self.client.waitForServicesResolved(device: Self.device, timeout: .seconds(20)) }
        _ = await waitUntil { await self.client.resolutionWaiters(device: Self.device) == 1 }
        try await mock.set(Self.device, "org.bluez.Device1", "Name", .string("BlueZ 5.66"))
        #expect(await waitUntil { await self.client.devices[Self.device]?.name == "BlueZ 5.66" })
        #expect(await client.resolutionWaiters(device: Self.device) == 1, "the name change ended the wait")
        try await mock.set(Self.device, "org.bluez.Device1", "ServicesResolved", .bool(true))
        try await waiting.value
        #expect(await client.devices[Self.device]?.connected == true)
    }

    /// A Connected=false that bluetoothd sends ends the wait and is reported, even when the
    /// connection itself was never signalled.
    @Test func disconnectionEndsTheWaitAndIsReported() async throws {
        let recorder = EventRecorder(client.events)
        let waiting = Task { try await self.client.waitForServicesResolved(device: Self.device, timeout: .seconds(20)) }
        _ = await waitUntil { await self.client.resolutionWaiters(device: Self.device) == 1 }
        try await mock.set(Self.device, "org.bluez.Device1", "Connected", .bool(false))
        await #expect(throws: BlueZError.doesNotExist) { try await waiting.value }
        let reported = await recorder.wait {
            if case .deviceConnectionChanged(let device) = $0 {
                device.path == Self.device && !device.connected
            } else {
                false
            }
        }
        #expect(reported != nil)
    }

    /// BlueZ with a cached database: ServicesResolved true, then the peer's database turns
    /// out changed, false, the services removed and added again, true once more (seen in the
    /// lab's conformance run, where readersim restarts between faults). A lookup in between
    /// waits for the second resolution instead of calling the characteristic missing.
    @Test func aCharacteristicIsFoundAfterBlueZResolvesAgain() async throws {
        try await mock.mock("ConnectDevice", [.string("hci0"), .string("00:BB:01:00:00:00")])
        try await mock.set(Self.device, "org.bluez.Device1", "ServicesResolved", .bool(true))
        _ = await waitUntil { await self.client.devices[Self.device]?.servicesResolved == true }
        let lookup = Task {
            try await self.client.resolvedCharacteristic(
                device: Self.device, service: Self.serviceUUID,
                characteristic: Self.characteristicUUID, timeout: .seconds(20))
        }
        #expect(await waitUntil { await self.client.resolutionWaiters(device: Self.device) == 1 })
        try await mock.set(Self.device, "org.bluez.Device1", "ServicesResolved", .bool(false))
        try await addReaderGatt()
        try await mock.set(Self.device, "org.bluez.Device1", "ServicesResolved", .bool(true))
        let found = try await lookup.value
        #expect(found?.path == Self.characteristic)
        #expect(await client.resolutionWaiters(device: Self.device) == 0)
    }

    /// A device that resolved its services without the characteristic: nil at the timeout,
    /// and a disconnection meanwhile ends the wait as the resolution's does.
    @Test func aMissingCharacteristicIsNilAtTheTimeout() async throws {
        try await mock.mock("ConnectDevice", [.string("hci0"), .string("00:BB:01:00:00:00")])
        try await mock.set(Self.device, "org.bluez.Device1", "ServicesResolved", .bool(true))
        _ = await waitUntil { await self.client.devices[Self.device]?.servicesResolved == true }
        let missing = try await client.resolvedCharacteristic(
            device: Self.device, service: Self.serviceUUID,
            characteristic: Self.characteristicUUID,
            timeout: .milliseconds(300))
        #expect(missing == nil)
        #expect(await client.resolutionWaiters(device: Self.device) == 0)

        let lookup = Task {
            try await self.client.resolvedCharacteristic(
                device: Self.device, service: Self.serviceUUID,
                characteristic: Self.characteristicUUID, timeout: .seconds(20))
        }
        #expect(await waitUntil { await self.client.resolutionWaiters(device: Self.device) == 1 })
        try await mock.set(Self.device, "org.bluez.Device1", "Connected", .bool(false))
        await #expect(throws: BlueZError.doesNotExist) { try await lookup.value }
    }

    @Test func resolutionTimesOut() async throws {
        try await mock.mock("ConnectDevice", [.string("hci0"), .string("00:BB:01:00:00:00")])
        _ = await waitUntil { await self.client.devices[Self.device]?.connected == true }
        let start = ContinuousClock.now
        await #expect(throws: BlueZError.timeout) {
            try await self.client.waitForServicesResolved(device: Self.device, timeout: .milliseconds(300))
        }
        // Not a timing test: the bound only tells a timeout from a hang.
        #expect(ContinuousClock.now - start < .seconds(30))
    }

    @Test func deviceVanishingMidConnectEndsTheWait() async throws {
        let waiting = Task { try await self.client.waitForServicesResolved(device: Self.device, timeout: .seconds(10)) }
        try await Task.sleep(for: .milliseconds(100))
        try await mock.mock(
            "RemoveDevice", [.objectPath(Self.device)], path: "/org/bluez/hci0", interface: "org.bluez.Adapter1")
        await #expect(throws: BlueZError.doesNotExist) { try await waiting.value }
    }

    @Test func readWriteAndNotify() async throws {
        try await addReaderGatt()
        let found = await waitUntil {
            await self.client.characteristic(
                device: Self.device, service: Self.serviceUUID.uppercased(),
                characteristic: Self.characteristicUUID) != nil
        }
        #expect(found)
        let characteristic = try #require(
            await client.characteristic(
                device: Self.device, service: Self.serviceUUID,
                characteristic: Self.characteristicUUID))
        #expect(characteristic.path == Self.characteristic)
        #expect(characteristic.mtu == 185)
        #expect(characteristic.flags == ["write", "notify"])

        #expect(try await client.readValue(characteristic: Self.characteristic) == Array("LOCKED".utf8))

        let notifications = try await client.notifications(characteristic: Self.characteristic)
        try await client.writeValue(characteristic: Self.characteristic, [0x01, 0x02], type: .withResponse)
        var iterator = notifications.makeAsyncIterator()
        #expect(await iterator.next() == [0x47, 0x01, 0x02])
        let calls = try await mock.calls(Self.characteristic)
        #expect(calls == ["ReadValue", "StartNotify", "WriteValue"])
    }

    @Test func notificationsEndWhenTheDeviceGoes() async throws {
        try await addReaderGatt()
        _ = await waitUntil { await self.client.gattCharacteristics[Self.characteristic] != nil }
        let notifications = try await client.notifications(characteristic: Self.characteristic)
        try await mock.mock(
            "RemoveDevice", [.objectPath(Self.device)], path: "/org/bluez/hci0", interface: "org.bluez.Adapter1")
        var iterator = notifications.makeAsyncIterator()
        #expect(await iterator.next() == nil)
        #expect(await client.gattCharacteristics.isEmpty)
    }

    @Test func peripheralRegistersAndServesItsObjects() async throws {
        for (interface, method) in [
            ("org.bluez.GattManager1", "RegisterApplication"),
            ("org.bluez.GattManager1", "UnregisterApplication"),
            ("org.bluez.LEAdvertisingManager1", "RegisterAdvertisement"),
            ("org.bluez.LEAdvertisingManager1", "UnregisterAdvertisement"),
        ] {
            let signature = method.hasPrefix("Register") ? "oa{sv}" : "o"
            try await mock.mock(
                "AddMethod", [.string(interface), .string(method), .string(signature), .string(""), .string("")],
                path: "/org/bluez/hci0", interface: "org.freedesktop.DBus.Mock")
        }
        let peripheralBus = try DBusConnection(address: bus.address)
        defer { peripheralBus.close() }
        let writes = WriteLog()
        let peripheral = BlueZPeripheral(
            connection: peripheralBus, adapter: "/org/bluez/hci0", root: "/org/accessd/readersim/reader0",
            advertisement: .init(
                serviceData: ["fff8": [1, 2, 3]], serviceUUIDs: [Self.serviceUUID], localName: "Front door",
                intervalMilliseconds: 100),
            serviceUUID: Self.serviceUUID, characteristicUUID: Self.characteristicUUID
        ) { writes.append($0) }
        try await peripheral.register()
        #expect(try await mock.calls("/org/bluez/hci0").suffix(2) == ["RegisterApplication", "RegisterAdvertisement"])

        // What bluetoothd reads back from us.
        let control = mock.control
        let advertisement = try await control.call(
            destination: peripheralBus.uniqueName, path: peripheral.advertisementPath,
            interface: "org.freedesktop.DBus.Properties", method: "GetAll",
            arguments: [.string("org.bluez.LEAdvertisement1")])
        let properties = try #require(advertisement.first?.stringKeyed)
        #expect(properties["Type"]?.string == "peripheral")
        #expect(properties["LocalName"]?.string == "Front door")
        #expect(properties["ServiceData"]?.stringKeyed?["fff8"]?.bytes == [1, 2, 3])
        #expect(properties["MinInterval"]?.integer == 100)

        let objects = try await control.call(
            destination: peripheralBus.uniqueName, path: peripheral.root,
            interface: "org.freedesktop.DBus.ObjectManager", method: "GetManagedObjects")
        let tree = try #require(objects.first?.stringKeyed)
        #expect(
            tree[peripheral.characteristicPath]?.stringKeyed?["org.bluez.GattCharacteristic1"]?.stringKeyed?["UUID"]?
                .string
                == Self.characteristicUUID)
        #expect(
            tree[peripheral.servicePath]?.stringKeyed?["org.bluez.GattService1"]?.stringKeyed?["Primary"]?.bool == true)

        // A central writes (through bluetoothd) and subscribes; the reader notifies.
        _ = try await control.call(
            destination: peripheralBus.uniqueName, path: peripheral.characteristicPath,
            interface: "org.bluez.GattCharacteristic1", method: "WriteValue",
            arguments: [.bytes([9, 8]), .properties(["device": .objectPath(Self.device), "mtu": .uint16(23)])])
        #expect(writes.values.map(\.value) == [[9, 8]])
        #expect(writes.values.first?.central == Self.device)
        #expect(writes.values.first?.mtu == 23)
        #expect(throws: BlueZError.notReady) { try peripheral.notify([1]) }
        _ = try await control.call(
            destination: peripheralBus.uniqueName, path: peripheral.characteristicPath,
            interface: "org.bluez.GattCharacteristic1", method: "StartNotify")
        let signals = try await control.signals(matching: [
            DBusMatchRule(
                interface: "org.freedesktop.DBus.Properties",
                path: peripheral.characteristicPath)
        ])
        try peripheral.notify([0xAA, 0xBB])
        var iterator = signals.makeAsyncIterator()
        let notification = await iterator.next()?.message
        #expect(notification?.arguments[1].stringKeyed?["Value"]?.bytes == [0xAA, 0xBB])

        // Unknown methods are refused, not swallowed.
        await #expect(throws: DBusError.self) {
            try await control.call(
                destination: peripheralBus.uniqueName, path: peripheral.characteristicPath,
                interface: "org.bluez.GattCharacteristic1", method: "Confirm")
        }

        // A central connected: a presence advertisement, non-connectable, beside the first.
        try await peripheral.startPresence(.init(serviceData: ["fff8": [1, 0x13, 3]], intervalMilliseconds: 100))
        #expect(try await mock.calls("/org/bluez/hci0").last == "RegisterAdvertisement")
        let presence = try await control.call(
            destination: peripheralBus.uniqueName, path: peripheral.presencePath,
            interface: "org.freedesktop.DBus.Properties", method: "GetAll",
            arguments: [.string("org.bluez.LEAdvertisement1")])
        let presenceProperties = try #require(presence.first?.stringKeyed)
        #expect(presenceProperties["Type"]?.string == "broadcast")
        #expect(presenceProperties["LocalName"] == nil)
        #expect(presenceProperties["ServiceData"]?.stringKeyed?["fff8"]?.bytes == [1, 0x13, 3])
        await peripheral.stopPresence()
        #expect(try await mock.calls("/org/bluez/hci0").last == "UnregisterAdvertisement")
        await #expect(throws: DBusError.self) {
            try await control.call(
                destination: peripheralBus.uniqueName, path: peripheral.presencePath,
                interface: "org.freedesktop.DBus.Properties", method: "GetAll",
                arguments: [.string("org.bluez.LEAdvertisement1")])
        }

        await peripheral.unregister()
        #expect(
            try await mock.calls("/org/bluez/hci0").suffix(2) == ["UnregisterAdvertisement", "UnregisterApplication"])
        await #expect(throws: DBusError.self) {
            try await control.call(
                destination: peripheralBus.uniqueName, path: peripheral.advertisementPath,
                interface: "org.freedesktop.DBus.Properties", method: "GetAll",
                arguments: [.string("org.bluez.LEAdvertisement1")])
        }
    }

    @Test func peripheralRegistrationFailureIsTypedAndCleansUp() async throws {
        // dbusmock's adapter has no GattManager1: bluetoothd without the GATT server plugin.
        let peripheralBus = try DBusConnection(address: bus.address)
        defer { peripheralBus.close() }
        let peripheral = BlueZPeripheral(
            connection: peripheralBus, adapter: "/org/bluez/hci0", root: "/org/accessd/readersim/reader0",
            advertisement: .init(serviceData: ["fff8": [1]]), serviceUUID: Self.serviceUUID,
            characteristicUUID: Self.characteristicUUID
        ) { _ in }
        await #expect(throws: BlueZError.doesNotExist) { try await peripheral.register() }
        await #expect(throws: DBusError.self) {
            try await self.mock.control.call(
                destination: peripheralBus.uniqueName, path: peripheral.root,
                interface: "org.freedesktop.DBus.ObjectManager", method: "GetManagedObjects")
        }
    }

    /// Polls for up to 20 s (a loaded CI machine), returning as soon as `condition` holds.
    func waitUntil(_ condition: @Sendable () async -> Bool) async -> Bool {
        for _ in 0..<2000 {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }
}

final class WriteLog: @unchecked Sendable {
    private let lock = NSLock()
    private var writes: [BlueZPeripheral.Write] = []
    func append(_ write: BlueZPeripheral.Write) { lock.withLock { writes.append(write) } }
    var values: [BlueZPeripheral.Write] { lock.withLock { writes } }
}
