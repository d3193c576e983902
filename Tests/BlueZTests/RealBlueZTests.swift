import BlueZTestSupport
import Foundation
import SuiteTraits
import Synchronization
import Testing

@testable import BlueZ

/// The same client and peripheral against the real bluetoothd and kernel, in the lab VM
/// (`../shared/bluez-lab`, run by scripts/test): hci0 plays the reader, hci1 the kiosk.
/// Outside the lab (no `LAB_CONTROLLERS`) there is no Bluetooth to test against; the test
/// command runs this suite inside the lab explicitly, and fails if the lab does not boot.
@Suite(
    "Real BlueZ in the lab", .threadOfItsOwn,
    .enabled(if: ProcessInfo.processInfo.environment["LAB_CONTROLLERS"] != nil), .timeLimit(.minutes(20)))
final class RealBlueZTests: Sendable {
    static let serviceUUID = "6a4e0001-5c8d-4b7a-9f3e-2d1c0b8a7f60"
    static let characteristicUUID = "6a4e0002-5c8d-4b7a-9f3e-2d1c0b8a7f60"
    static let serviceDataUUID = "0000fff8-0000-1000-8000-00805f9b34fb"

    @Test func centralDiscoversConnectsWritesAndIsNotified() async throws {
        let central = try DBusConnection()
        defer { central.close() }
        let client = BlueZClient(connection: central)
        let recorder = EventRecorder(client.events)
        try await client.start()
        #expect(await recorder.wait { $0 == .serviceAppeared } != nil)
        let adapters = await client.adapters
        #expect(Set(adapters.keys).isSuperset(of: ["/org/bluez/hci0", "/org/bluez/hci1"]))
        #expect(adapters.values.allSatisfy { $0.powered })
        let readerAddress = try #require(adapters["/org/bluez/hci0"]?.address)

        try await client.setDiscoveryFilter(adapter: "/org/bluez/hci1", DiscoveryFilter())
        try await client.startDiscovery(adapter: "/org/bluez/hci1")

        let payload: [UInt8] = [0x01, 0x01, 0x03, 0x00, 0x00, 0x2A, 0x01, 0xC5, 0x14, 0x28, 0x51, 0x17, 0xE0, 0x01]
        let readerBus = try DBusConnection()
        defer { readerBus.close() }
        let peripheralBox = Mutex<BlueZPeripheral?>(nil)
        let peripheral = BlueZPeripheral(
            connection: readerBus, adapter: "/org/bluez/hci0", root: "/org/accessd/test/reader0",
            advertisement: .init(serviceData: ["fff8": payload]),
            serviceUUID: Self.serviceUUID, characteristicUUID: Self.characteristicUUID
        ) { write in
            // Echo every write back as a notification, prefixed with 'G'.
            try? peripheralBox.withLock { $0 }?.notify([0x47] + write.value)
        }
        peripheralBox.withLock { $0 = peripheral }
        try await peripheral.register()

        let seen = await recorder.wait(timeout: .seconds(20)) { event in
            guard case .deviceAdvertised(let device) = event else { return false }
            return device.adapterPath == "/org/bluez/hci1" && device.serviceData[Self.serviceDataUUID] == payload
        }
        guard case .deviceAdvertised(let device)? = seen else {
            Issue.record("the reader's advertisement never arrived: \(recorder.events.suffix(10))")
            return
        }
        #expect(device.address == readerAddress)

        try await client.stopDiscovery(adapter: "/org/bluez/hci1")
        try await client.connectAndResolve(device: device.path, timeout: .seconds(20))
        let characteristic = try #require(
            await client.characteristic(
                device: device.path, service: Self.serviceUUID, characteristic: Self.characteristicUUID))
        let notifications = try await client.notifications(characteristic: characteristic.path)
        try await client.writeValue(characteristic: characteristic.path, [1, 2, 3])
        var iterator = notifications.makeAsyncIterator()
        #expect(await iterator.next() == [0x47, 1, 2, 3])
        try await client.disconnect(device: device.path)
        await peripheral.unregister()
    }
}
