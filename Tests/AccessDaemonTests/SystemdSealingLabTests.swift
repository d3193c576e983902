import AccessCore
import AccessJSON
import Crypto
import Foundation
import GRDB
import SuiteTraits
import Testing

@testable import AccessStore

/// Issue #32 in the lab's systemd VM with a TPM2: the package's data key sealed to the chip, no
/// key bytes in the state files, a state directory (and a whole disk) copied to a machine with
/// another TPM opening nothing, the same state back on its own chip working, the host-key seal
/// where there is no TPM, and plaintext state from before sealing migrated. scripts/test boots
/// the VM once per phase (`ACCESSD_SEALING_PHASE`), sharing `ACCESSD_SEALING` (a directory on
/// the host, mounted in the VM) between boots as the disk that is copied.
@Suite(
    "secrets sealed under systemd", .threadOfItsOwn, .serialized, .enabled(if: SystemdSealing.phase != nil),
    .timeLimit(.minutes(20)))
struct SystemdSealingLabTests {
    typealias Lab = SystemdLab
    typealias Phase = SystemdSealing

    /// Boot 1, TPM chip A.
    @Test(.enabled(if: Phase.phase == "first")) func onAKioskWithATPMNoKeyIsInTheStateFiles() async throws {
        try await Lab.ensureInstalled()
        let secrets = try #require(try Lab.call("status.get").get()["secrets"])
        #expect(secrets["protection"] == "tpm2" && secrets["sealedToMachine"] == true, "\(secrets)")
        // systemd-creds says how the key is sealed: the line it opens names the seal.
        let opened = try Lab.must("systemd-creds decrypt --name=accessd-data-key /etc/accessd/data-key.cred -")
        #expect(opened.hasPrefix("accessd-data-key 1 host+tpm2 "))
        print(try Lab.must("accessctl status | grep secrets"))
        let (_, access) = try await Lab.openTheFrontDoor(directory: "/tmp/sealing-door", cardholder: "Ada")
        #expect(access.status == 0 && access.output.contains("granted"), "\(access.output)")
        // What a thief with root would find: the data key opens the sealed row, and that key is
        // the credential's (its fingerprint). Its bytes are in none of the files.
        let credential = try #require(try Lab.call("credentials.list").get()["credentials"]?.array?.first)
        let key = try Phase.openSigningKey(dataKeyLine: opened, credential: try #require(credential["id"]?.string))
        #expect(KeyFingerprint.of(key.publicKey) == credential["fingerprint"]?.string)
        #expect(Phase.filesHolding([UInt8](key.rawRepresentation)).isEmpty)
        // The copies the next boots start from: the state directory, and the disk's keys.
        try Lab.must(
            """
            systemctl stop accessd && rm -rf \(Phase.copy) && mkdir -p \(Phase.copy)/disk &&
            cp -a /var/lib/accessd \(Phase.copy)/state &&
            cp -a /var/lib/systemd/credential.secret /etc/accessd/data-key.cred \(Phase.copy)/disk/ &&
            systemctl start accessd
            """)
        try await Lab.waitFor("accessd running again") { try Lab.isRunning() }
        try Lab.must("accessctl credentials delete \(credential["id"]?.string ?? "") --offline-only")
    }

    /// Boot 2, TPM chip B: another machine.
    @Test(.enabled(if: Phase.phase == "other")) func aCopyOnAnotherMachineOpensNothingAndSaysWhy() async throws {
        try await Lab.ensureInstalled()
        // 1. The state directory alone, beside this machine's own data key.
        try await Phase.restart(with: "cp -a \(Phase.copy)/state /var/lib/accessd")
        try Phase.expectKeyUnavailable(reason: "another data key")
        // 2. The whole disk's keys too (the host key and the sealed data key): the data key is
        // sealed to chip A as well, so it does not open here either.
        try await Phase.restart(
            with: """
                cp -a \(Phase.copy)/state /var/lib/accessd &&
                cp -a \(Phase.copy)/disk/credential.secret /var/lib/systemd/credential.secret &&
                cp -a \(Phase.copy)/disk/data-key.cred /etc/accessd/data-key.cred
                """)
        let secrets = try #require(try Lab.call("status.get").get()["secrets"])
        #expect(secrets["problem"]?.string?.contains("does not open on this machine") == true, "\(secrets)")
        try Phase.expectKeyUnavailable(reason: "no data key")
    }

    /// Boot 3, chip A again: the same disk back on its own TPM.
    @Test(.enabled(if: Phase.phase == "back")) func theSameStateBackOnItsOwnTPMWorks() async throws {
        try await Lab.ensureInstalled()
        try await Phase.restart(
            with: """
                cp -a \(Phase.copy)/state /var/lib/accessd &&
                cp -a \(Phase.copy)/disk/credential.secret /var/lib/systemd/credential.secret &&
                cp -a \(Phase.copy)/disk/data-key.cred /etc/accessd/data-key.cred
                """)
        let status = try Lab.call("status.get").get()
        #expect(status["secrets"]?["problem"] == nil, "\(status)")
        #expect(status["usableCredentialCount"] == 1, "\(status)")
        let credential = try #require(try Lab.call("credentials.list").get()["credentials"]?.array?.first)
        #expect(credential["state"] == "active" && credential["fingerprint"]?.string != nil, "\(credential)")
    }

    /// Boot 4, no TPM: the host-key seal, said; and plaintext state from before sealing migrated.
    @Test(.enabled(if: Phase.phase == "notpm")) func withoutATPMTheHostKeySealsAndOldStateIsSealed() async throws {
        try await Lab.ensureInstalled()
        let secrets = try #require(try Lab.call("status.get").get()["secrets"])
        #expect(secrets["protection"] == "host" && secrets["sealedToMachine"] == true, "\(secrets)")
        let shown = try Lab.must("accessctl status")
        print(shown)
        #expect(shown.contains("sealed to this machine (host)"))
        // The database as the version before sealing left it: the keys in clear.
        let key = P256.Signing.PrivateKey()
        let lockKey = [UInt8](repeating: 0xC3, count: 32)
        let cursor = try Lab.cursor()
        try await Phase.restart(with: "true") {
            try Phase.writePlaintextState(signingKey: key, lockKey: lockKey)
        }
        #expect(try Lab.journal(since: cursor).contains("sealed the secrets of a database from before sealing"))
        #expect(Phase.filesHolding([UInt8](key.rawRepresentation)).isEmpty)
        #expect(Phase.filesHolding(lockKey).isEmpty)
        let credential = try #require(try Lab.call("credentials.list").get()["credentials"]?.array?.first)
        #expect(credential["state"] == "active", "\(credential)")
        #expect(credential["fingerprint"]?.string == KeyFingerprint.of(key.publicKey))
    }
}

/// The phases' shared steps.
enum SystemdSealing {
    static var phase: String? {
        SystemdLab.enabled ? ProcessInfo.processInfo.environment["ACCESSD_SEALING_PHASE"] : nil
    }
    /// The disk copied between boots: on the host, mounted in each VM at the same path.
    static var copy: String { (ProcessInfo.processInfo.environment["ACCESSD_SEALING"] ?? "/tmp/sealing") + "/copy" }
    static let database = "/var/lib/accessd/accessd.sqlite"

    /// Stops accessd, replaces its state (`script`, after the old state is removed; `prepare`
    /// in this process), starts it and waits until it answers.
    static func restart(with script: String, prepare: () throws -> Void = {}) async throws {
        try SystemdLab.must("systemctl stop accessd && rm -rf /var/lib/accessd && \(script)")
        try prepare()
        try SystemdLab.must("chown -R accessd:accessd /var/lib/accessd && systemctl start accessd")
        try await SystemdLab.waitFor("accessd answering") {
            try SystemdLab.isRunning() && (try? SystemdLab.call("status.get").get()) != nil
        }
    }

    /// The copied credential: listed `keyUnavailable` with `reason`, the SDK state, `diagnose`
    /// failing with the reason, a journal error; accessd running.
    static func expectKeyUnavailable(reason: String) throws {
        let status = try SystemdLab.call("status.get").get()
        #expect(status["credentialCount"] == 1 && status["usableCredentialCount"] == 0, "\(status)")
        #expect(status["states"]?.array?.contains("errorCredentialKeyUnavailable") == true, "\(status)")
        #expect(status["secrets"]?["keyUnavailable"] == 1, "\(status)")
        let credential = try #require(try SystemdLab.call("credentials.list").get()["credentials"]?.array?.first)
        #expect(credential["state"] == "keyUnavailable", "\(credential)")
        #expect(credential["keyProblem"]?.string?.contains(reason) == true, "\(credential)")
        let diagnose = try SystemdLab.sh("accessctl diagnose")
        #expect(diagnose.status != 0 && diagnose.output.contains("secrets"), "\(diagnose.output)")
        #expect(try SystemdLab.journal().contains("credential key unavailable"))
        #expect(try SystemdLab.isRunning())
        print("keyUnavailable (\(reason)):\n\(diagnose.output)")
    }

    /// The credential's signing key as root on the kiosk can open it: the data key's line from
    /// systemd-creds, the sealed row from the database.
    static func openSigningKey(dataKeyLine: String, credential: String) throws -> P256.Signing.PrivateKey {
        let dataKey = try DataKeySource.parse(dataKeyLine, origin: "systemd-creds")
        let queue = try DatabaseQueue(path: database, configuration: readOnly)
        let sealed = try queue.read { db in
            try Data.fetchOne(db, sql: "SELECT signingKey FROM credential WHERE id = ?", arguments: [credential])
        }
        let stored = try #require(sealed)
        let raw = try #require(SealedColumn.open(stored, key: dataKey, place: SealedColumn.signingKey(credential)))
        return try P256.Signing.PrivateKey(rawRepresentation: raw)
    }

    static var readOnly: Configuration {
        var configuration = Configuration()
        configuration.readonly = true
        return configuration
    }

    /// The state files that hold `bytes`.
    static func filesHolding(_ bytes: [UInt8]) -> [String] {
        [database, database + "-wal", database + "-shm"].filter { path in
            guard let contents = FileManager.default.contents(atPath: path) else { return false }
            return [UInt8](contents).firstRange(of: bytes) != nil
        }
    }

    /// A database as the version before sealing wrote it: a credential and an Aperio item with
    /// their keys in clear (its schema; the rows it inserted).
    static func writePlaintextState(signingKey: P256.Signing.PrivateKey, lockKey: [UInt8]) throws {
        let id = String(repeating: "0c", count: 16)
        do {
            let legacy = try AccessStore(directory: "/var/lib/accessd", dataKey: .failure(.notInstalled("old version")))
            try legacy.database.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO credential(id, siteName, siteTag, sitePublicKey, siteURL, cardholder, deviceName,
                          state, secondFactor, signingKey, registeredAt, lastSyncAt)
                        VALUES (?, 'Old site', 1359405057, ?, 'http://127.0.0.1:9', 'Ada', 'kiosk', 'active', 0, ?, 0, ?)
                        """,
                    arguments: [
                        id, P256.Signing.PrivateKey().publicKey.x963Representation, signingKey.rawRepresentation,
                        Date().timeIntervalSince1970,
                    ])
                try db.execute(
                    sql: """
                        INSERT INTO item(credentialID, id, type, name, state, siteTag, aperioIdentifier, aperioKey)
                        VALUES (?, 'lock-1', 'aperio', 'Store room', 'active', 42, ?, ?)
                        """,
                    arguments: [id, Data(repeating: 1, count: 8), Data(lockKey)])
            }
        }
        #expect(!filesHolding([UInt8](signingKey.rawRepresentation)).isEmpty, "plaintext written (else proves nothing)")
    }
}
