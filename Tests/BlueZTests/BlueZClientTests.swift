import BlueZTestSupport
import Foundation
import SuiteTraits
import Testing

@testable import BlueZ

/// The BlueZ client against python-dbusmock's bluez5 template on a private bus.
@Suite("BlueZ client against dbusmock", .threadOfItsOwn)
final class BlueZClientTests {
    let bus: PrivateBus
    let mock: BlueZMock
    let connection: DBusConnection
    let client: BlueZClient
    let recorder: EventRecorder

    static let readerAddress = "00:BB:01:00:00:00"
    static let readerPath = "/org/bluez/hci0/dev_00_BB_01_00_00_00"
    static let serviceUUID = "0000fff8-0000-1000-8000-00805f9b34fb"

    init() async throws {
        bus = try PrivateBus()
        mock = try await BlueZMock(bus: bus)
        try await mock.addAdapter("hci0")
        connection = try DBusConnection(address: bus.address)
        client = BlueZClient(connection: connection)
        recorder = EventRecorder(client.events)
        try await client.start()
    }

    deinit {
        connection.close()
    }

    @Test func startReportsTheExistingTree() async throws {
        let added = await recorder.wait { if case .adapterAdded = $0 { true } else { false } }
        guard case .adapterAdded(let adapter)? = added else {
            Issue.record("no adapter: \(recorder.events)")
            return
        }
        #expect(adapter.path == "/org/bluez/hci0")
        #expect(adapter.name == "hci0")
        #expect(adapter.powered)
        #expect(adapter.address?.description == "00:01:02:03:04:05")
        #expect(await recorder.wait { $0 == .serviceAppeared } != nil)
        #expect(await client.isServicePresent)
    }

    @Test func discoveryUsesTheFilterAndIsReported() async throws {
        try await client.setDiscoveryFilter(
            adapter: "/org/bluez/hci0",
            DiscoveryFilter(uuids: [Self.serviceUUID]))
        try await client.startDiscovery(adapter: "/org/bluez/hci0")
        let discovering = await recorder.wait {
            if case .adapterChanged(let adapter) = $0 { adapter.discovering } else { false }
        }
        #expect(discovering != nil)
        let calls = try await mock.calls("/org/bluez/hci0")
        #expect(calls.suffix(2) == ["SetDiscoveryFilter", "StartDiscovery"])
        try await client.stopDiscovery(adapter: "/org/bluez/hci0")
        #expect(
            await recorder.wait {
                if case .adapterChanged(let adapter) = $0 { !adapter.discovering } else { false }
            } != nil)
    }

    @Test func advertisementsArriveWithRSSIAndServiceData() async throws {
        try await mock.addDevice(Self.readerAddress, alias: "Front door")
        let first = await recorder.wait { if case .deviceAdvertised = $0 { true } else { false } }
        guard case .deviceAdvertised(let device)? = first else {
            Issue.record("device not reported: \(recorder.events)")
            return
        }
        #expect(device.path == Self.readerPath)
        #expect(device.adapterPath == "/org/bluez/hci0")
        #expect(device.address?.description == Self.readerAddress)
        #expect(device.name == "Front door")

        let payload: [UInt8] = [0x01, 0x01, 0x03, 0x00, 0x00, 0x2A, 0x01, 0xC5, 0x14, 0x28, 0x51, 0x17, 0xE0, 0x01]
        let mark = recorder.events.count
        // Real BlueZ types: ServiceData a{sv} of ay, RSSI n.
        try await mock.set(
            Self.readerPath, "org.bluez.Device1", "ServiceData",
            .dictionary(
                keySignature: "s", valueSignature: "v",
                [.init(.string(Self.serviceUUID), .variant(.bytes(payload)))]))
        try await mock.set(Self.readerPath, "org.bluez.Device1", "RSSI", .int16(-67))
        try await mock.set(
            Self.readerPath, "org.bluez.Device1", "ManufacturerData",
            .dictionary(
                keySignature: "q", valueSignature: "v",
                [.init(.uint16(0xFFFF), .variant(.bytes([0xAB])))]))
        let advertised = await recorder.wait(from: mark) {
            if case .deviceAdvertised(let device) = $0 {
                device.rssi == -67 && device.manufacturerData[0xFFFF] != nil
            } else {
                false
            }
        }
        guard case .deviceAdvertised(let latest)? = advertised else {
            Issue.record("advertisement not reported: \(recorder.events.dropFirst(mark))")
            return
        }
        #expect(latest.serviceData[Self.serviceUUID] == payload)
        #expect(latest.manufacturerData == [0xFFFF: [0xAB]])
    }

    @Test func connectionStateChangesAreReported() async throws {
        try await mock.addDevice(Self.readerAddress)
        try await client.connect(device: Self.readerPath)
        // dbusmock's Connect leaves Connected false (docs/bluez.md); ConnectDevice sets it.
        try await mock.mock("ConnectDevice", [.string("hci0"), .string(Self.readerAddress)])
        let connected = await recorder.wait {
            if case .deviceConnectionChanged(let device) = $0 { device.connected } else { false }
        }
        #expect(connected != nil)
        #expect(try await mock.calls(Self.readerPath).contains("Connect"))
    }

    @Test func adapterRemovalTakesItsDevices() async throws {
        try await mock.addDevice(Self.readerAddress)
        _ = await recorder.wait { if case .deviceAdvertised = $0 { true } else { false } }
        try await mock.mock("RemoveAdapter", [.string("hci0")])
        #expect(await recorder.wait { $0 == .deviceRemoved(path: Self.readerPath) } != nil)
        #expect(await recorder.wait { $0 == .adapterRemoved(path: "/org/bluez/hci0") } != nil)
        #expect(await client.adapters.isEmpty)
        #expect(await client.devices.isEmpty)
        // And back.
        try await mock.addAdapter("hci0")
        let mark = recorder.events.count
        #expect(await recorder.wait(from: mark - 1) { if case .adapterAdded = $0 { true } else { false } } != nil)
    }

    @Test func poweringOffIsReported() async throws {
        try await client.setPowered(adapter: "/org/bluez/hci0", false)
        let off = await recorder.wait { if case .adapterChanged(let adapter) = $0 { !adapter.powered } else { false } }
        #expect(off != nil)
    }

    @Test func bluetoothdRestartIsFollowed() async throws {
        try await mock.addDevice(Self.readerAddress)
        _ = await recorder.wait { if case .deviceAdvertised = $0 { true } else { false } }
        try await mock.kill()
        #expect(await recorder.wait { $0 == .serviceVanished } != nil)
        #expect(await client.adapters.isEmpty)
        #expect(!(await client.isServicePresent))
        let events = recorder.events
        let vanished = try #require(events.firstIndex(of: .serviceVanished))
        #expect(events[..<vanished].contains(.deviceRemoved(path: Self.readerPath)))
        #expect(events[..<vanished].contains(.adapterRemoved(path: "/org/bluez/hci0")))

        // Calls while it is away fail with a typed error, not a hang.
        await #expect(throws: BlueZError.serviceUnknown) {
            try await self.client.startDiscovery(adapter: "/org/bluez/hci0")
        }

        try await mock.restart()
        let mark = events.count
        #expect(await recorder.wait(from: mark) { $0 == .serviceAppeared } != nil)
        try await mock.addAdapter("hci0")
        #expect(await recorder.wait(from: mark) { if case .adapterAdded = $0 { true } else { false } } != nil)
        #expect(await client.isServicePresent)
    }

    @Test func signalsFromAnotherSenderAreIgnored() async throws {
        // An impostor on the bus announces a device under BlueZ's path.
        try mock.control.emitSignal(
            path: "/", interface: "org.freedesktop.DBus.ObjectManager", name: "InterfacesAdded",
            arguments: [
                .objectPath("/org/bluez/hci0/dev_66_66_66_66_66_66"),
                .dictionary(
                    keySignature: "s", valueSignature: "a{sv}",
                    [.init(.string("org.bluez.Device1"), .properties(["Address": .string("66:66:66:66:66:66")]))]),
            ])
        try await mock.addDevice(Self.readerAddress)
        _ = await recorder.wait { if case .deviceAdvertised = $0 { true } else { false } }
        #expect(await client.devices.keys.sorted() == [Self.readerPath])
    }

    @Test func stoppingReleasesItsMatchRules() async throws {
        #expect(connection.subscriptionCount == 1)
        await client.stop()
        var released = false
        for _ in 0..<2000 where !released {  // 20 s: only reached on failure
            released = connection.subscriptionCount == 0
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(released)
    }

    @Test func errorsAreTyped() async throws {
        await #expect(throws: BlueZError.doesNotExist) {
            try await self.client.startDiscovery(adapter: "/org/bluez/hci9")
        }
        await #expect(throws: BlueZError.doesNotExist) {
            try await self.client.connect(device: "/org/bluez/hci0/dev_00_00_00_00_00_09")
        }
    }
}

@Suite("BlueZ error mapping")
struct BlueZErrorMappingTests {
    @Test(arguments: [
        ("org.bluez.Error.NotReady", "", BlueZError.notReady),
        ("org.bluez.Error.InProgress", "", .inProgress),
        ("org.bluez.Error.AlreadyConnected", "", .alreadyConnected),
        ("org.bluez.Error.Failed", "le-connection-abort-by-local", .connectionAborted("le-connection-abort-by-local")),
        ("org.bluez.Error.Failed", "Operation already in progress", .failed("Operation already in progress")),
        ("org.freedesktop.DBus.Error.AccessDenied", "policy", .accessDenied("policy")),
        ("org.bluez.Error.NotPermitted", "x", .accessDenied("x")),
        ("org.freedesktop.DBus.Error.NoReply", "", .timeout),
        ("org.freedesktop.DBus.Error.ServiceUnknown", "", .serviceUnknown),
        ("org.freedesktop.DBus.Error.UnknownObject", "", .doesNotExist),
        ("org.bluez.Error.InvalidArguments", "bad", .invalidArguments("bad")),
        ("com.example.Other", "m", .other(name: "com.example.Other", message: "m")),
    ])
    func mapsEachDBusError(_ c: (String, String, BlueZError)) {
        #expect(BlueZError(.remote(name: c.0, message: c.1)) == c.2)
    }

    @Test func transientAndPermanentAreTold() {
        #expect(BlueZError.inProgress.isTransient)
        #expect(BlueZError.connectionAborted("x").isTransient)
        #expect(!BlueZError.accessDenied("x").isTransient)
        #expect(!BlueZError.serviceUnknown.isTransient)
        #expect(BlueZError(.disconnected) == .disconnected)
    }
}
