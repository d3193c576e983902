import AccessCore
import AccessJSON
import BlueZTestSupport
import ControlSocket
import Foundation
import Testing

/// A credential's PIN after registration (issue #13, item 4): changed with the old one
/// (counted as an attempt, so it is no way around the lock-out), and a lock-out lifted by an
/// administrator. Through the real `accessctl` on a real socket over the daemon's services.
@Suite("PIN change and unlock", .serialized, .timeLimit(.minutes(5)))
struct PinLifecycleTests {
    static let id = ShellHarness.credentialID.description

    @Test func aPinIsChangedWithTheOldOne() async throws {
        let shell = try ShellHarness(secondFactor: true)
        try await shell.start()
        let socket = try await shell.serveSocket()
        let wrong = await shell.call(
            "credentials.setPin", ["id": .string(Self.id), "oldPin": "000000", "newPin": "1357"])
        #expect(
            wrong.failureData?["error"] == "secondFactor.wrongPin" && wrong.failureData?["attemptsLeft"] == 4,
            "\(wrong)")
        let changed = try await taskOnThreadOfItsOwn {
            try runCommand(
                [
                    AccessctlTests.accessctl, "credentials", "pin", String(Self.id.prefix(8)), "--pin-stdin",
                    "--socket", socket,
                ],
                input: "\(ShellHarness.pin)\n1357\n", mergingErrors: true)
        }.value
        #expect(changed.status == 0 && changed.output == "PIN changed for \(Self.id)\n", "\(changed.output)")
        #expect(shell.failedPinAttempts == 0, "the right old PIN gives the count back")
        // At the door: the new PIN opens, the old one no longer does.
        try await shell.readerAdvertises(FakeReader(shell.readerConfiguration(secondFactor: true)))
        let access = try await taskOnThreadOfItsOwn {
            try runCommand(
                [AccessctlTests.accessctl, "access", "2A01", "--pin-stdin", "--socket", socket],
                input: "\(ShellHarness.pin)\n1357\n", mergingErrors: true)
        }.value
        #expect(access.status == 0, "\(access.output)")
        #expect(
            access.output.contains("wrong PIN (4 attempts left)") && access.output.contains("granted: granted"),
            "\(access.output)")
        await shell.stop()
    }

    /// Issue #33, item 8: eight changes at once with the right old PIN: two were told "changed"
    /// and only one of their PINs worked; six were told wrongPin for the right PIN (and charged).
    /// Now one changes it, the others are refused as busy without an attempt charged, and the
    /// PIN reported changed is the one that works.
    @Test func parallelChangesChangeItOnceAndChargeNothing() async throws {
        let shell = try ShellHarness(secondFactor: true)
        try await shell.start()
        let answers = await withTaskGroup(of: (String, Result<JSONValue, RPCError>).self) { group in
            for pin in ["1357", "2468", "3579", "4680", "5791", "6802", "7913", "8024"] {
                group.addTask {
                    (
                        pin,
                        await shell.call(
                            "credentials.setPin",
                            ["id": .string(Self.id), "oldPin": .string(ShellHarness.pin), "newPin": .string(pin)])
                    )
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let changed = answers.filter { if case .success = $0.1 { true } else { false } }
        #expect(changed.count == 1, "\(answers)")
        #expect(
            answers.allSatisfy {
                if case .success = $0.1 { return true }
                return $0.1.failureData?["error"] == "secondFactor.changeInProgress"
            }, "\(answers)")
        #expect(shell.failedPinAttempts == 0)
        // The PIN reported changed is the one that opens.
        let newPin = try #require(changed.first?.0)
        let again = await shell.call(
            "credentials.setPin", ["id": .string(Self.id), "oldPin": .string(newPin), "newPin": "9999"])
        if case .failure(let error) = again { Issue.record("the PIN reported changed does not work: \(error)") }
        await shell.stop()
    }

    @Test func anAdministratorLiftsALockOut() async throws {
        let shell = try ShellHarness(secondFactor: true)
        try await shell.start()
        let socket = try await shell.serveSocket()
        for _ in 0..<5 {
            _ = await shell.call("credentials.setPin", ["id": .string(Self.id), "oldPin": "000000", "newPin": "1357"])
        }
        let locked = await shell.call(
            "credentials.setPin", ["id": .string(Self.id), "oldPin": .string(ShellHarness.pin), "newPin": "1357"])
        #expect(locked.failureData?["error"] == "secondFactorLockedOut", "\(locked)")
        #expect(try await shell.call("status.get").get()["states"]?.array?.contains("secondFactorLockedOut") == true)
        let unlock = try await taskOnThreadOfItsOwn {
            try runCommand(
                [AccessctlTests.accessctl, "credentials", "unlock", Self.id, "--socket", socket], mergingErrors: true)
        }.value
        #expect(unlock.status == 0 && unlock.output == "unlocked \(Self.id): 5 attempts left\n", "\(unlock.output)")
        let changed = await shell.call(
            "credentials.setPin", ["id": .string(Self.id), "oldPin": .string(ShellHarness.pin), "newPin": "1357"])
        #expect((try? changed.get()) != nil, "\(changed)")
        let event = try await shell.waitForEvent("credentials.changed") { $0["reason"] == "unlocked" }
        #expect(event["id"] == .string(Self.id))
        await shell.stop()
    }

    @Test func noPinCannotBeChanged() async throws {
        let shell = try ShellHarness(secondFactor: false)
        try await shell.start()
        let result = await shell.call(
            "credentials.setPin", ["id": .string(Self.id), "oldPin": "1234", "newPin": "5678"])
        #expect(result.failureData?["error"] == "secondFactor.notSet", "\(result)")
        let badFormat = await shell.call(
            "credentials.setPin", ["id": .string(Self.id), "oldPin": "1234", "newPin": "12"])
        #expect(badFormat.failureCode == -32602)
        await shell.stop()
    }
}
