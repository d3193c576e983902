import BlueZTestSupport
import Foundation
import SuiteTraits
import Testing

@testable import BlueZ

/// Signals a subscriber cannot take in time are never dropped silently: the gap is marked
/// in the stream, and the BlueZ client answers it by reading bluetoothd's tree again.
@Suite("Signal overflow", .threadOfItsOwn, .timeLimit(.minutes(5)))
final class SignalOverflowTests {
    let bus: PrivateBus

    init() throws {
        bus = try PrivateBus()
    }

    @Test func aFullBufferIsMarkedWhereTheGapIs() async throws {
        let connection = try DBusConnection(address: bus.address)
        defer { connection.close() }
        let stream = try await connection.signals(
            matching: [DBusMatchRule(interface: "org.accessd.Test")], bufferLimit: 4)
        for index in 0..<10 {
            try connection.emitSignal(
                path: "/test", interface: "org.accessd.Test", name: "N", arguments: [.int32(Int32(index))])
        }
        // Nobody reads yet: four wait in the buffer, six are dropped and counted.
        let deadline = ContinuousClock.now + .seconds(60)
        while connection.droppedSignals < 6, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(connection.droppedSignals == 6)
        var iterator = stream.makeAsyncIterator()
        var first: [Int32] = []
        for _ in 0..<4 { first.append(await iterator.next()?.message?.arguments.first?.integer.map(Int32.init) ?? -1) }
        #expect(first == [0, 1, 2, 3])
        try connection.emitSignal(path: "/test", interface: "org.accessd.Test", name: "N", arguments: [.int32(10)])
        guard case .overflow(let dropped)? = await iterator.next() else {
            Issue.record("no overflow notice where the six were dropped")
            return
        }
        #expect(dropped == 6)
        #expect(await iterator.next()?.message?.arguments.first?.integer == 10)
    }

    /// bluetoothd reports 600 new devices at once, faster than the client reads them. Each
    /// signal says something no later one repeats, so every one dropped for the full buffer
    /// is a device the client would never know of, unless it reads the tree again.
    @Test func theClientReadsTheTreeAgainAfterAnOverflow() async throws {
        let mock = try await BlueZMock(bus: bus)
        try await mock.addAdapter("hci0")
        let connection = try DBusConnection(address: bus.address)
        defer { connection.close() }
        let client = BlueZClient(connection: connection, signalBufferLimit: 2)
        try await client.start()
        try await mock.run(
            python: """
                manager = objects['/']
                for i in range(600):
                    path = '/org/bluez/hci0/dev_00_BB_02_00_%02X_%02X' % (i // 256, i % 256)
                    address = '00:BB:02:00:%02X:%02X' % (i // 256, i % 256)
                    properties = {'Address': dbus.String(address), 'Adapter': dbus.ObjectPath('/org/bluez/hci0'),
                                  'RSSI': dbus.Int16(-60), 'Connected': dbus.Boolean(False)}
                    self.AddObject(path, 'org.bluez.Device1', properties, [])
                    manager.EmitSignal('org.freedesktop.DBus.ObjectManager', 'InterfacesAdded', 'oa{sa{sv}}',
                                       [dbus.ObjectPath(path), {'org.bluez.Device1': properties}])
                """)
        let deadline = ContinuousClock.now + .seconds(60)
        while await client.devices.count < 600, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(connection.droppedSignals > 0)
        #expect(await client.overflowResyncs > 0)
        #expect(await client.devices.count == 600)
    }

    /// After a resynchronisation, the signals that were already queued are older than what
    /// was read: they must not take the mirror back in time (bluetoothd's serials order them).
    @Test func signalsOlderThanTheSnapshotAreSkipped() async throws {
        let mock = try await BlueZMock(bus: bus)
        try await mock.addAdapter("hci0")
        let device = try await mock.addDevice("00:BB:01:00:00:00")
        let connection = try DBusConnection(address: bus.address)
        defer { connection.close() }
        let client = BlueZClient(connection: connection, signalBufferLimit: 2)
        try await client.start()
        try await mock.run(
            python: """
                device = objects['\(device)']
                for i in range(3001):
                    rssi = dbus.Int16(-33 if i == 3000 else -40 - i % 40)
                    device.props['org.bluez.Device1']['RSSI'] = rssi
                    device.EmitSignal('org.freedesktop.DBus.Properties', 'PropertiesChanged', 'sa{sv}as',
                                      ['org.bluez.Device1', {'RSSI': rssi}, []])
                """)
        // dbusmock's devices start at -79 dBm; the burst ends at -33.
        let deadline = ContinuousClock.now + .seconds(60)
        while await client.devices[device]?.rssi != -33, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(connection.droppedSignals > 0)
        #expect(await client.devices[device]?.rssi == -33)
    }
}
