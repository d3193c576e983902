import AccessJSON
import BlueZTestSupport
import ControlSocket
import Foundation
import SuiteTraits
import Testing

/// The name accessd shows for a reader is the one it advertises. bluetoothd also sets a
/// device's `Name` to the GAP Device Name it reads over a link, in a signal of its own: a
/// reader that runs on BlueZ showed as "BlueZ 5.66" from its first connection on (seen in the
/// lab's reader health records and `accessctl events`).
@Suite("Reader names", .threadOfItsOwn, .timeLimit(.minutes(3)))
struct ReaderNameTests {
    @Test func aNameReadOverALinkDoesNotRenameTheReaderAndANewAdvertisedOneDoes() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        defer { _ = harness.stop() }
        _ = try await harness.waitForStatus { $0["isScanning"]?.bool == true }
        let watcher = try harness.connect()
        _ = try watcher.call("events.subscribe", ["kinds": ["reader.updated"]])
        try await harness.mock.addDevice(DaemonHarness.readerAddress, alias: "Front door")
        try await harness.advertise(payload: DaemonEndToEndTests.payload, rssi: -69)
        var names: [String] = []
        func name(_ event: JSONValue) -> String? { event["params"]?["data"]?["name"]?.string }
        _ = try #require(
            try waitForEvent(watcher) {
                name($0).map { names.append($0) }
                return name($0) == "Front door"
            })

        // bluetoothd's gap profile read the Device Name characteristic; the reader goes on
        // advertising and moves (RSSI −69 → −80: path loss 10 → 21 dB, out of auto range, so
        // an update is published).
        try await harness.mock.set(DaemonHarness.readerPath, "org.bluez.Device1", "Name", .string("BlueZ 5.66"))
        try await harness.advertise(payload: DaemonEndToEndTests.payload, rssi: -80)
        // Then it advertises another name: Name arrives with the advertisement's data.
        let payload = DaemonEndToEndTests.payload.map(String.init).joined(separator: ", ")
        try await harness.mock.run(
            python: """
                objects['\(DaemonHarness.readerPath)'].EmitSignal('org.freedesktop.DBus.Properties', 'PropertiesChanged',
                    'sa{sv}as', ['org.bluez.Device1', {'Name': dbus.String('Side door'), 'RSSI': dbus.Int16(-69),
                    'ServiceData': dbus.Dictionary({'\(DaemonHarness.serviceDataUUID)': dbus.Array([\(payload)],
                    signature='y')}, signature='sv')}, []])
                """)
        _ = try #require(
            try waitForEvent(watcher) {
                name($0).map { names.append($0) }
                return name($0) == "Side door"
            }, "\(names)")
        #expect(!names.contains("BlueZ 5.66"), "\(names)")
        let listed = try harness.connect().call("readers.list").get()
        #expect(listed["readers"]?.array?.first?["name"] == "Side door", "\(listed)")
    }
}
