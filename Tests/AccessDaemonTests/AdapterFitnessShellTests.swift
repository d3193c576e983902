import AccessJSON
import BlueZTestSupport
import Foundation
import Testing

@testable import AccessDaemon
@testable import ControlSocket

/// An adapter that cannot do the job (issue #38, part 3): a BR/EDR-only controller was taken
/// like any other, discovery was asked of it and failed, and nothing said why. Now it is
/// judged before use from bluetoothd's `Adapter1.Roles`: not tried, reported with the SDK's
/// `errorDeviceNotSupported` and the reason, and a fit adapter is preferred to it.
@Suite("Adapter fitness in the shell and the daemon", .timeLimit(.minutes(5)))
struct AdapterFitnessShellTests {
    @Test func aBREDROnlyAdapterIsReportedNotTriedAndAFitOneIsTakenWhenItAppears() async throws {
        let shell = try ShellHarness { $0.adapter = nil }
        await shell.central.addAdapter("hci0", roles: [])
        shell.runServices()
        try await shell.waitUntil("unfit reported") {
            try await shell.call("status.get").get()["states"]?.array?.contains("errorDeviceNotSupported") == true
        }
        let status = try await shell.call("status.get").get()
        #expect(status["radio"]?["unfit"]?.string?.contains("BR/EDR-only") == true, "\(status.jsonText)")
        #expect(status["isScanning"]?.bool == false)
        #expect(await shell.central.callCount("StartDiscovery") == 0)

        await shell.central.addAdapter("hci1")
        try await shell.waitUntil("hci1 taken") {
            try await shell.call("status.get").get()["adapter"]?.string == "hci1"
        }
        try await shell.waitUntil("discovering on hci1") {
            await shell.central.callCount("StartDiscovery /org/bluez/hci1") == 1
        }
        let fit = try await shell.call("status.get").get()
        #expect(fit["states"]?.array?.contains("errorDeviceNotSupported") == false, "\(fit.jsonText)")
        #expect(fit["radio"]?["unfit"] == nil || fit["radio"]?["unfit"] == .null)
        #expect(await shell.central.callCount("StartDiscovery /org/bluez/hci0") == 0)
        await shell.stop()
    }

    /// The real accessd and accessctl over dbusmock's bluez5 template: the adapter's Roles
    /// emptied as a BR/EDR-only controller's are; `status` and `diagnose` say so and why.
    @Test func accessctlSaysWhyTheAdapterIsNotUsed() async throws {
        let harness = try await DaemonHarness()
        try await harness.start()
        defer { _ = harness.stop() }
        // The template's adapter has no Roles (as before BlueZ 5.48): added, then emptied.
        _ = try await harness.mock.mock(
            "AddProperty", [.string("org.bluez.Adapter1"), .string("Roles"), .variant(.strings(["central"]))],
            path: "/org/bluez/hci0", interface: "org.freedesktop.DBus.Mock")
        try await harness.mock.set("/org/bluez/hci0", "org.bluez.Adapter1", "Roles", .strings([]))
        _ = try await harness.waitForStatus { $0["states"]?.array?.contains("errorDeviceNotSupported") == true }
        let status = try runCommand([AccessctlTests.accessctl, "status", "--socket", harness.socketPath])
        #expect(status.output.contains("radio:             NOT USABLE: no Bluetooth LE"), "\(status.output)")
        let diagnose = try runCommand(
            [AccessctlTests.accessctl, "diagnose", "--socket", harness.socketPath], environment: ["LC_ALL": "C.UTF-8"])
        #expect(diagnose.status != 0)
        let radio = diagnose.output.split(separator: "\n").first { $0.contains("  radio  ") }.map(String.init) ?? ""
        #expect(radio.hasPrefix("FAIL") && radio.contains("BR/EDR-only"), "\(diagnose.output)")
        #expect(diagnose.output.contains("use an adapter with Bluetooth LE"), "\(diagnose.output)")
        print(status.output + diagnose.output)
    }
}
