import Foundation
import Testing

@testable import AccessStore

/// Where the data key comes from: systemd's credential, else a key file made once, 0600.
@Suite("Data key source")
struct DataKeySourceTests {
    let directory: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("accessd-key-\(UUID().uuidString)")
            .path
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    @Test func aKeyFileIsCreatedOnceForItsOwnerAlone() throws {
        let file = directory + "/state.key"
        let first = try DataKeySource.load(credentialsDirectory: nil, keyFile: file).get()
        #expect(first.protection == .keyFile)
        var info = stat()
        #expect(stat(file, &info) == 0 && info.st_mode & 0o777 == 0o600)
        let again = try DataKeySource.load(credentialsDirectory: nil, keyFile: file).get()
        #expect(again.key == first.key)
        chmod(file, 0o644)
        guard case .failure(.unreadable(let reason)) = DataKeySource.load(credentialsDirectory: nil, keyFile: file)
        else {
            Issue.record("a key file others can read must be refused")
            return
        }
        #expect(reason.contains("chmod 600"))
    }

    @Test func theSystemdCredentialSaysHowItIsSealed() throws {
        let key = DataKey.random(protection: .tpm2, origin: "x")
        for (seal, protection) in [("host+tpm2", DataKey.Protection.tpm2), ("host", .host)] {
            try DataKeySource.line(for: key, seal: seal).write(
                toFile: directory + "/accessd-data-key", atomically: true, encoding: .utf8)
            let loaded = try DataKeySource.load(credentialsDirectory: directory, keyFile: directory + "/unused").get()
            #expect(loaded.protection == protection && loaded.key == key.key)
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/unused"), "a credential wins over the key file")
    }

    @Test(arguments: [
        ("accessd-data-key unavailable /etc/accessd/data-key.cred does not open here", "notInstalled"),
        ("accessd-data-key 1 host c2hvcnQ=", "malformed"),
        ("accessd-data-key 2 host AAAA", "malformed"),
        ("something else", "malformed"),
        (String(repeating: "x", count: 5000), "malformed"),
    ])
    func aCredentialThatIsNoKeyIsRefusedWithItsReason(content: String, expected: String) throws {
        try content.write(toFile: directory + "/accessd-data-key", atomically: true, encoding: .utf8)
        guard case .failure(let error) = DataKeySource.load(credentialsDirectory: directory, keyFile: directory + "/k")
        else {
            Issue.record("\(content.prefix(40)) was taken as a key")
            return
        }
        switch error {
        case .notInstalled(let reason): #expect(expected == "notInstalled" && reason.contains("does not open here"))
        case .malformed: #expect(expected == "malformed")
        case .unreadable: Issue.record("unexpected: \(error)")
        }
    }
}

extension DataKeySourceTests {
    /// Under the unit: the line its ExecStartPre handed over is read once and removed; a
    /// missing handoff is reported, never replaced by a key file.
    @Test func theUnitsHandoffIsReadOnceAndNeverWeakenedToAKeyFile() throws {
        let handoff = directory + "/data-key"
        let key = DataKey.random(protection: .host, origin: "x")
        try DataKeySource.line(for: key, seal: "host+tpm2").write(toFile: handoff, atomically: true, encoding: .utf8)
        let loaded = try DataKeySource.load(credentialsDirectory: nil, handoff: handoff, keyFile: directory + "/k")
            .get()
        #expect(loaded.key == key.key && loaded.protection == .tpm2)
        #expect(!FileManager.default.fileExists(atPath: handoff), "the clear key is removed once read")
        guard
            case .failure(.notInstalled) = DataKeySource.load(
                credentialsDirectory: nil, handoff: handoff, keyFile: directory + "/k")
        else {
            Issue.record("a missing handoff must be reported")
            return
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/k"))
    }
}
