import AccessCore
import AccessJSON
import BlueZTestSupport
import Foundation
import Testing

/// A broadcaster rotating reader ids grew the registry, and the journal with a `reader.updated`
/// per new id, without bound. At `ReaderRegistry.capacity` new readers are refused and counted;
/// those tracked go on updating.
@Suite("Reader registry capacity", .timeLimit(.minutes(5)))
struct ReaderCapacityTests {
    @Test func newReadersBeyondTheCapacityAreRefusedAndCounted() async throws {
        // Readers stay tracked for the whole test: with 2,058 sightings journalled one by one
        // on a loaded machine (the full host suite), the first were past the 10 s stale
        // timeout before the last came, and the count never reached the capacity.
        let shell = try ShellHarness {
            $0.staleTimeout = .seconds(600)
            $0.expiryDelay = .seconds(600)
        }
        try await shell.start()
        let limit = ReaderRegistry.capacity
        func advertise(_ id: UInt32, rssi: Int) async {
            var advertisement = ReaderAdvertisement(
                kind: .gallagherStyle, flags: [.manualConnectEnabled], readerID: ReaderID(id), txPower: -59,
                autoConnectPathLoss: 20, manualConnectPathLoss: 40, siteTag: ShellHarness.siteTag)
            advertisement.readerID = ReaderID(id)
            // An address per id, as a broadcaster rotating both would (one device rotating ids
            // alone is merged at the access engine's door: only its newest report counts).
            _ = await shell.central.advertise(
                address: String(format: "00:BB:02:00:%02X:%02X", id / 256, id % 256), rssi: rssi,
                serviceData: [ReaderAdvertisement.serviceDataUUIDString: advertisement.serviceData])
        }
        for id in 1...UInt32(limit + 10) { await advertise(id, rssi: -80) }
        try await shell.waitUntil("all advertisements handled", timeout: .seconds(60)) {
            let status = try await shell.call("status.get").get()
            return status["readerCount"]?.int == Int64(limit) && status["refusedAdvertisements"]?.int == 10
        }
        // One tracked reader moves: still followed.
        await advertise(1, rssi: -60)
        await advertise(1, rssi: -60)
        try await shell.waitUntil("the tracked reader updates") {
            try await shell.call("readers.list").get()["readers"]?.array?.first { $0["id"] == "00000001" }?["rssi"]
                == -60
        }
        await shell.stop()
    }
}
