import Foundation
import Testing
@testable import AccessStore

@Suite("Store")
struct AccessStoreTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("accessd-store-\(UUID().uuidString)").path

    @Test func settingsPersistAcrossReopening() throws {
        do {
            let store = try AccessStore(directory: directory)
            #expect(try store.boolSetting("scanning") == nil)
            try store.setBoolSetting("scanning", false)
            try store.setBoolSetting("scanning", true)
            try store.setSetting("logLevel", "debug")
        }
        let reopened = try AccessStore(directory: directory)
        #expect(try reopened.boolSetting("scanning") == true)
        #expect(try reopened.setting("logLevel") == "debug")
        let attributes = try FileManager.default.attributesOfItem(atPath: directory)
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
        let file = try FileManager.default.attributesOfItem(atPath: reopened.path)
        #expect((file[.posixPermissions] as? Int) == 0o600)
    }

    @Test func journalSequencesGrowAndReplay() throws {
        let store = try AccessStore(directory: directory)
        var sequences: [Int64] = []
        for index in 0..<10 {
            sequences.append(try store.append(kind: index % 2 == 0 ? "reader.updated" : "sdk.state",
                                              data: "{\"i\":\(index)}", time: Double(index)).sequence)
        }
        #expect(sequences == Array(1...10))
        #expect(try store.events(after: 7).map(\.sequence) == [8, 9, 10])
        #expect(try store.events(after: 0, kinds: ["sdk.state"]).map(\.sequence) == [2, 4, 6, 8, 10])
        #expect(try store.events(after: 0, limit: 3).map(\.data) == ["{\"i\":0}", "{\"i\":1}", "{\"i\":2}"])
    }

    @Test func retentionNeverReusesSequenceNumbers() throws {
        do {
            let store = try AccessStore(directory: directory)
            for index in 0..<20 { try store.append(kind: "k", data: "{}", time: Double(index)) }
            // Older than 5 s before t = 20 goes (times 0…14).
            #expect(try store.prune(maxEvents: 8, maxAge: 5, now: 20) == 15)
            #expect(try store.firstSequence() == 16)
            // Then at most 3 remain, the newest.
            #expect(try store.prune(maxEvents: 3, maxAge: 100, now: 20) == 2)
            #expect(try store.events(after: 0).map(\.sequence) == [18, 19, 20])
            #expect(try store.prune(maxEvents: 0, maxAge: 100, now: 20) == 3)
            #expect(try store.firstSequence() == nil)
        }
        let reopened = try AccessStore(directory: directory)
        #expect(try reopened.lastSequence() == 20)
        #expect(try reopened.append(kind: "k", data: "{}", time: 21).sequence == 21)
    }
}
