import BlueZTestSupport
import Testing

@testable import AccessDaemon
@testable import ControlSocket

/// Discovery follows the operator's setting and the adapter, over the fake central.
@Suite("Discovery service over the fake central", .timeLimit(.minutes(5)))
struct DiscoveryServiceTests {
    @Test func scanningOffStopsDiscoveryAndForgetsReaders() async throws {
        let shell = try ShellHarness()
        try await shell.start()
        try await shell.readerAdvertises(nil)
        #expect(try await shell.call("status.get").get()["readerCount"]?.int == 1)
        _ = try await shell.call("scanning.set", ["enabled": false], role: .operator).get()
        try await shell.waitUntil("stopped") { await shell.central.callCount("StopDiscovery") == 1 }
        try await shell.waitUntil("forgotten") { try await shell.call("status.get").get()["readerCount"]?.int == 0 }
        #expect(try await shell.call("status.get").get()["isScanning"]?.bool == false)
        // Advertisements heard while off are not readers.
        await shell.central.advertise(address: ShellHarness.readerAddress, rssi: -60, serviceData: [:])
        _ = try await shell.call("scanning.set", ["enabled": true], role: .operator).get()
        try await shell.waitUntil("started again") { await shell.central.callCount("StartDiscovery") == 2 }
        try await shell.waitUntil("scanning") { try await shell.call("status.get").get()["isScanning"]?.bool == true }
        await shell.stop()
    }

    @Test func aPowerCycleWaitsThenStartsAgain() async throws {
        let shell = try ShellHarness()
        try await shell.start()
        try await shell.readerAdvertises(nil)
        await shell.central.setPowered("hci0", false)
        try await shell.waitUntil("disabled") {
            try await shell.call("status.get").get()["states"]?.array?.contains("bleErrorDisabled") == true
        }
        try await shell.waitUntil("forgotten") { try await shell.call("status.get").get()["readerCount"]?.int == 0 }
        try await Task.sleep(for: .milliseconds(1200))  // a tick: no start while powered off
        #expect(await shell.central.callCount("StartDiscovery") == 1)
        await shell.central.setPowered("hci0", true)
        try await shell.waitUntil("started again") { await shell.central.callCount("StartDiscovery") == 2 }
        await shell.stop()
    }

    @Test func theConfiguredAdapterIsTheOnlyOneUsed() async throws {
        let shell = try ShellHarness { $0.adapter = "hci1" }
        await shell.central.addAdapter("hci0")
        shell.runServices()
        try await shell.waitUntil("no adapter") {
            try await shell.call("status.get").get()["states"]?.array?.contains("errorNoBleFeature") == true
        }
        await shell.central.addAdapter("hci1")
        try await shell.waitUntil("hci1") { try await shell.call("status.get").get()["adapter"]?.string == "hci1" }
        try await shell.waitUntil("discovering on hci1") {
            await shell.central.callCount("StartDiscovery /org/bluez/hci1") == 1
        }
        #expect(await shell.central.callCount("StartDiscovery /org/bluez/hci0") == 0)
        await shell.stop()
    }
}
