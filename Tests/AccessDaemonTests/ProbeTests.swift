import AccessCore
import AccessJSON
import BlueZTestSupport
import Foundation
import Testing

@testable import AccessDaemon
@testable import ControlSocket

/// `readers.probe` and `accessctl probe` (issue #14, item 4) over the fake central: every
/// advertisement of the reader while the probe listens, then trial exchanges. The lab runs it
/// against a reader whose RSSI the radio sets (`LabEndToEndTests.aProbeMeasuresTheReaderAndCalibrates`).
@Suite("Probing a reader", .serialized, .timeLimit(.minutes(5)))
struct ProbeTests {
    @Test func aProbeCountsEveryAdvertisementAndSumsThemUp() async throws {
        let shell = try ShellHarness()
        try await shell.start()
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration()))
        // On the engine, so that a loaded machine cannot make the listening end first.
        let key = try #require(await shell.daemon.access.startProbe(ShellHarness.readerID))
        // Ten advertisements at −66…−75 dBm (transmit power −59: path loss 7…16 dB).
        for index in 0..<10 {
            _ = await shell.central.advertise(
                address: ShellHarness.readerAddress, rssi: -66 - index,
                serviceData: [
                    ReaderAdvertisement.serviceDataUUIDString: ReaderAdvertisement(
                        kind: .gallagherStyle, flags: [.autoConnectEnabled, .manualConnectEnabled],
                        readerID: ShellHarness.readerID,
                        txPower: -59, autoConnectPathLoss: 20, manualConnectPathLoss: 40, siteTag: ShellHarness.siteTag
                    ).serviceData
                ])
            try await Task.sleep(for: .milliseconds(20))
        }
        try await shell.waitUntil("ten advertisements probed") {
            await shell.daemon.access.probes[key]?.probe.samples.count == 10
        }
        let probed = try #require(await shell.daemon.access.finishProbe(key, seconds: 1))
        let answer = try JSONValue(encoding: probed)
        #expect(answer["advertisements"] == 10, "\(answer)")
        #expect(answer["rssi"]?["min"] == -75.0 && answer["rssi"]?["max"] == -66.0, "\(answer)")
        #expect(answer["rawPathLoss"]?["median"] == 11.5, "\(answer)")
        #expect(answer["range"] == "auto" && answer["autoConnectPathLoss"] == 20 && answer["txPower"] == -59)
        #expect((answer["intervalMs"]?["median"]?.number ?? 0) >= 15, "\(answer)")
        #expect(answer["histogram"]?.array?.reduce(0) { $0 + ($1["count"]?.int ?? 0) } == 10)
        let calibration = try #require(answer["calibration"])
        #expect(calibration["manualConnectPathLoss"]?.int == (calibration["autoConnectPathLoss"]?.int ?? 0) + 20)

        // Through the socket's method: listening to a reader that is not heard, and bounds.
        let unheard = try await shell.call("readers.probe", ["reader": "2A02", "seconds": 1], role: .observer).get()
        #expect(unheard["advertisements"] == 0 && unheard["range"] == "unheard")
        let refused = await shell.call("readers.probe", ["reader": "2A01", "seconds": 61], role: .observer)
        #expect(refused.failureMessage?.hasSuffix("seconds is 1 to 60") == true, "\(refused)")
        await shell.stop()
    }

    /// The real accessctl over the socket: listening, trials that open nothing, a verdict.
    /// Issue #33, item 7: four 60 s probes started by an observer that then closed its
    /// connections kept every other probe out for the full minute.
    @Test func anAbandonedProbeFreesItsSlot() async throws {
        let shell = try ShellHarness()
        try await shell.start()
        let socket = try await shell.serveSocket()
        var abandoned: [ControlConnection] = []
        for index in 0..<AccessEngine.probeLimit {
            let connection = try ControlConnection(path: socket)
            try connection.sendRaw(
                #"{"jsonrpc":"2.0","id":\#(index),"method":"readers.probe","params":{"reader":"2A01","seconds":60}}"#
                    + "\n")
            abandoned.append(connection)
        }
        try await shell.waitUntil("every probe slot taken") { await shell.daemon.access.probes.count == 4 }
        abandoned.removeAll()  // closes them
        try await shell.waitUntil("the slots freed", timeout: .seconds(5)) {
            await shell.daemon.access.probes.isEmpty
        }
        let probe = await shell.call("readers.probe", ["reader": "2A01", "seconds": 1], role: .observer)
        #expect((try? probe.get()) != nil, "\(probe)")
        await shell.stop()
    }

    @Test func accessctlProbeListensTriesAndJudges() async throws {
        let shell = try ShellHarness()
        try await shell.start()
        var configuration = shell.readerConfiguration()
        configuration.actions = [ReaderAction(id: 1, name: "Arm")]
        let reader = FakeReader(configuration)
        let flags: ReaderFlags = [.autoConnectEnabled, .manualConnectEnabled, .actionsEnabled]
        try await shell.readerAdvertises(reader, flags: flags)
        let socket = try await shell.serveSocket()
        // Until the probe ends: accessctl starting on a loaded machine has taken longer than
        // a fixed number of advertisements lasted.
        let advertising = Task {
            while !Task.isCancelled {
                try? await shell.readerAdvertises(reader, rssi: -70, times: 1, flags: flags)
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
        let result = try await taskOnThreadOfItsOwn {
            try runCommand(
                [AccessctlTests.accessctl, "probe", "2A01", "--seconds", "1", "--trials", "2", "--socket", socket],
                mergingErrors: true)
        }.value
        advertising.cancel()
        await advertising.value
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("reader 00002A01"), "\(result.output)")
        #expect(result.output.contains("  advertisements:  "), "\(result.output)")
        #expect(
            result.output.contains("  thresholds:      auto 20 dB, manual 40 dB: here in auto range"),
            "\(result.output)")
        #expect(result.output.contains("    1: actions listed (1) in "), "\(result.output)")
        #expect(result.output.contains("exchanges:       2 of 2 answered"), "\(result.output)")
        #expect(result.output.hasSuffix("verdict: OK\n"), "\(result.output)")
        #expect(try shell.events("access.completed").allSatisfy { $0["outcome"] == "actionsListed" }, "no door opened")
        print(result.output)

        // A reader without actions: no exchange opens nothing, so the trials are skipped, not failed.
        let plainAdvertising = Task {
            while !Task.isCancelled {
                try? await shell.readerAdvertises(reader, rssi: -70, times: 1)
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
        let plain = try await taskOnThreadOfItsOwn {
            try runCommand(
                [AccessctlTests.accessctl, "probe", "2A01", "--seconds", "1", "--socket", socket], mergingErrors: true)
        }.value
        plainAdvertising.cancel()
        await plainAdvertising.value
        #expect(plain.output.contains("    skipped: the reader offers no actions"), "\(plain.output)")

        let absent = try await taskOnThreadOfItsOwn {
            try runCommand(
                [AccessctlTests.accessctl, "probe", "2A09", "--seconds", "1", "--socket", socket], mergingErrors: true)
        }.value
        #expect(absent.status == 1 && absent.output.contains("verdict: not heard in 1 s"), "\(absent.output)")
        await shell.stop()
    }
}
