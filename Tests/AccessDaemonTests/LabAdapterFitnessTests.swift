import AccessJSON
import BlueZTestSupport
import Foundation
import SuiteTraits
import Testing

/// An adapter that cannot do accessd's job, against the real kernel and bluetoothd (issue #38,
/// part 3): BlueZ's emulator makes a BR/EDR-only controller (`btvirt -B`) beside the lab's
/// Bumble ones; accessd told to use it reports `errorDeviceNotSupported` with the reason and
/// never asks it to scan. scripts/test runs this suite in the first lab boot.
@Suite("Adapter fitness in the lab", .threadOfItsOwn, .serialized, .enabled(if: Lab.isBumble), .timeLimit(.minutes(5)))
struct LabAdapterFitnessTests {
    @Test func aBREDROnlyControllerIsReportedUnfitWithTheReason() async throws {
        // SQLite wants a local file system (the lab's output directory is 9p): the VM's /tmp;
        // the logs go to the output directory at the end.
        let directory = "/tmp/lab-fitness-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer {
            if let out = ProcessInfo.processInfo.environment["LAB_OUT"] {
                try? FileManager.default.createDirectory(
                    atPath: out + "/scenarios/fitness", withIntermediateDirectories: true)
                for log in ["accessd.log", "btvirt.log"] {
                    try? FileManager.default.copyItem(
                        atPath: directory + "/" + log, toPath: out + "/scenarios/fitness/" + log)
                }
            }
        }
        let adapter = "hci\(Lab.controllers)"
        let btvirt = try ChildProcess(["/usr/bin/btvirt", "-l1", "-B"], output: directory + "/btvirt.log")
        defer { _ = btvirt.stop(grace: 2) }
        var roles = ""
        for _ in 0..<150 {
            roles =
                (try? runCommand([
                    "/usr/bin/dbus-send", "--system", "--print-reply", "--dest=org.bluez", "/org/bluez/" + adapter,
                    "org.freedesktop.DBus.Properties.Get", "string:org.bluez.Adapter1", "string:Roles",
                ]))?.output ?? ""
            if roles.contains("array") { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        print("bluetoothd's Roles of \(adapter), a BR/EDR-only controller:\n\(roles)")
        try #require(roles.contains("array"), "\(adapter) did not appear with Roles")
        #expect(!roles.contains("central"))

        let daemon = try LabDaemon(directory: directory, config: "[bluetooth]\nadapter = \"\(adapter)\"\n")
        try await daemon.start()
        defer { _ = daemon.stop() }
        var status = JSONValue.null
        for _ in 0..<150 {
            status = try daemon.call("status.get").get()
            if status["states"]?.array?.contains("errorDeviceNotSupported") == true { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(status["states"]?.array?.contains("errorDeviceNotSupported") == true, "\(status.jsonText)")
        #expect(status["radio"]?["unfit"]?.string?.contains("BR/EDR-only") == true, "\(status.jsonText)")
        #expect(status["isScanning"]?.bool == false)
        let (_, text) = try daemon.accessctl(["status"])
        let (diagnosed, diagnosis) = try daemon.accessctl(["diagnose"])
        print("$ accessctl status\n\(text)$ accessctl diagnose\n\(diagnosis)")
        #expect(text.contains("NOT USABLE: no Bluetooth LE"), "\(text)")
        #expect(diagnosed != 0 && diagnosis.contains("use an adapter with Bluetooth LE"), "\(diagnosis)")
        #expect(!daemon.log.contains("discovery started"), "no discovery asked of it: \(daemon.log)")
    }
}
