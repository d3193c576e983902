import BlueZTestSupport
import Foundation
import SuiteTraits
import Testing

@testable import BlueZ

/// The BlueZ client against python-dbusmock's bluez5 template on a private bus.
@Suite("BlueZ client against dbusmock", .threadOfItsOwn, .timeLimit(.minutes(5)))
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

    /// `advertisementsOf`: a lobby's phones reach the daemon as one `othersHeard`, however
    /// many advertise; readers as themselves; a phone BlueZ forgets is not reported removed.
    @Test func onlyDevicesOfInterestAreReportedTheRestAreHeard() async throws {
        let filtered = BlueZClient(connection: connection, advertisementsOf: [Self.serviceUUID])
        let events = EventRecorder(filtered.events)
        try await filtered.start()
        #expect(await events.wait { $0 == .serviceAppeared } != nil)
        let phone = "/org/bluez/hci0/dev_4C_00_00_00_00_01"
        try await mock.addDevice("4C:00:00:00:00:01", adapter: "hci0")
        for rssi in [-60, -61, -62] { try await mock.set(phone, "org.bluez.Device1", "RSSI", .int16(Int16(rssi))) }
        try await mock.addDevice(Self.readerAddress, adapter: "hci0")
        try await mock.set(
            Self.readerPath, "org.bluez.Device1", "ServiceData",
            .dictionary(
                keySignature: "s", valueSignature: "v", [.init(.string(Self.serviceUUID), .variant(.bytes([1, 2])))]))
        let reader = await events.wait {
            if case .deviceAdvertised(let device) = $0 { device.path == Self.readerPath } else { false }
        }
        #expect(reader != nil)
        #expect(events.events.contains(.othersHeard))
        #expect(
            !events.events.contains {
                if case .deviceAdvertised(let device) = $0 { device.path == phone } else { false }
            })
        for path in [phone, Self.readerPath] {
            try await mock.mock(
                "RemoveDevice", [.objectPath(path)], path: "/org/bluez/hci0", interface: "org.bluez.Adapter1")
        }
        #expect(await events.wait { $0 == .deviceRemoved(path: Self.readerPath) } != nil)
        #expect(!events.events.contains(.deviceRemoved(path: phone)))
    }

    /// A consumer that stopped taking events: past `eventCapacity` the client does not drop
    /// one here and there (a lost disconnection would be lost for good) but starts the
    /// consumer over, as if bluetoothd had restarted, from the mirror as it is now.
    @Test func aConsumerThatFallsBehindIsStartedOverFromTheMirror() async throws {
        let small = BlueZClient(connection: connection, eventCapacity: 4)
        try await small.start()
        for index in 0..<10 {
            try await mock.addDevice(String(format: "00:BB:01:00:00:%02X", index + 1), adapter: "hci0")
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while await small.eventResets == 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(await small.eventResets > 0)
        let events = EventRecorder(small.events)
        #expect(await events.wait { $0 == .serviceAppeared } != nil)
        let seen = events.events
        let vanished = try #require(seen.firstIndex(of: .serviceVanished))
        let after = seen[vanished...].compactMap {
            if case .deviceAdvertised(let device) = $0 { device.path } else { nil }
        }
        #expect(Set(after).count == 10, "\(seen)")
    }
}

@Suite("BlueZ error mapping", .timeLimit(.minutes(5)))
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
