import AccessCore
import AccessDaemon
import ArgumentParser
import BlueZ
import Crypto
import Foundation

/// `readersim conformance`: plays the credential holder against a reader on the air and
/// checks it against docs/reader-protocol.md, one line per rule (§11 there).
struct ConformanceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conformance",
        abstract: "Check a reader on the air against docs/reader-protocol.md, as a credential holder.",
        discussion: """
            Registers a credential at the reader's site with an invitation (docs/site-api.md §3), \
            finds the reader by its id, then checks its advertisement, GATT layout, challenge, \
            framing at MTU 23 and at the link's MTU, replay and malformed-frame refusal, an unknown \
            credential, the actions listing and its timeout, each over a connection of its own. \
            Prints PASS, FAIL or SKIP with the document's section per check. Exit status 0 when \
            every check passed, 1 when one failed, 69 when the reader or the site cannot be reached.
            """)

    @Option(help: "The reader's id (up to eight hex digits), as it advertises it.") var reader: String
    @Option(help: "An invitation URL of the reader's site (readersim site invite --url …).") var invitation: String
    @Option(help: "PEM file of the CAs to trust for an https site, instead of the system's.") var caFile: String?
    @Option(help: "Adapter to play the holder on.") var adapter = "hci0"
    @Option(help: "D-Bus to reach bluetoothd on: system, or a bus address.") var bus = "system"
    @Option(help: "Seconds to listen for the reader's advertisement.") var listen = 10
    @Flag(help: "One JSON object per check instead of text.") var json = false

    func run() async throws {
        guard let readerID = ReaderID(reader) else {
            throw ValidationError("--reader must be 1 to 8 hex digits, not 0")
        }
        let credential = try await register(for: readerID)
        let connection: DBusConnection
        do {
            connection = try DBusConnection(address: bus == "system" ? nil : bus)
        } catch {
            throw unavailable("cannot reach the bus: \(error)")
        }
        defer { connection.close() }
        let central = BlueZClient(connection: connection)
        let adapterPath = "/org/bluez/" + adapter
        do throws(BlueZError) {
            try await central.start()
            await Self.forgetReaders(central, connection: connection, adapter: adapterPath)
            try await central.setDiscoveryFilter(
                adapter: adapterPath, DiscoveryFilter(transport: "le", duplicateData: true))
            try await central.startDiscovery(adapter: adapterPath)
        } catch {
            throw unavailable("cannot scan on \(adapter): \(error)")
        }
        // The central's events are read by nobody here: its devices table is what is needed.
        let drain = Task { for await _ in central.events {} }
        defer { drain.cancel() }
        var suite = ConformanceSuite(central: central, adapter: adapterPath, credential: credential)
        let results = await suite.run(listen: .seconds(listen))
        try? await central.stopDiscovery(adapter: adapterPath)
        await central.stop()
        print(json ? Self.jsonLines(results) : Self.text(results), terminator: "")
        if results.contains(where: { $0.verdict == .fail }) { throw ExitCode(1) }
    }

    /// Removes the readers BlueZ remembers on the adapter (RemoveDevice): their last
    /// advertisement would count as heard for a reader gone silent, and a cached GATT
    /// database of a reader that came back with other handles breaks subscribing.
    private static func forgetReaders(_ central: BlueZClient, connection: DBusConnection, adapter: String) async {
        for device in await central.devices.values
        where device.adapterPath == adapter && device.serviceData[ReaderAdvertisement.serviceDataUUIDString] != nil {
            _ = try? await connection.call(
                destination: BlueZClient.service, path: adapter, interface: Adapter1.interface,
                method: "RemoveDevice", arguments: [.objectPath(device.path)])
        }
    }

    /// A fresh credential at the site, as accessd registers one.
    private func register(for readerID: ReaderID) async throws -> ConformanceCredential {
        let (site, code): (SiteAddress, InvitationCode)
        do {
            (site, code) = try SiteAddress.parseInvitation(invitation)
        } catch {
            throw ValidationError("--invitation: \(error)")
        }
        let client = try SiteClient(caFile: caFile, timeout: .seconds(15))
        let key = P256.Signing.PrivateKey()
        let registration: SiteClient.Registration
        do {
            registration = try await client.register(
                site: site, code: code, deviceName: "readersim conformance",
                credentialKey: key.publicKey, secondFactorKey: nil)
        } catch {
            await client.shutdown()
            throw unavailable("the site refused the registration: \(error)")
        }
        await client.shutdown()
        return ConformanceCredential(
            readerID: readerID, siteTag: registration.siteTag, siteKey: registration.sitePublicKey,
            id: registration.credentialID, key: key)
    }

    private func unavailable(_ message: String) -> Error {
        FileHandle.standardError.write(Data("readersim conformance: \(message)\n".utf8))
        return ExitCode(69)
    }

    static func text(_ results: [ConformanceResult]) -> String {
        let width = results.map(\.check.count).max() ?? 0
        var text = ""
        for result in results {
            let verdict =
                switch result.verdict {
                case .pass: "PASS"
                case .fail: "FAIL"
                case .skipped: "SKIP"
                }
            let check = result.check + String(repeating: " ", count: width - result.check.count)
            text += "\(verdict)  \(result.section)  \(check)  \(result.detail)\n"
        }
        let failed = results.filter { $0.verdict == .fail }.count
        text +=
            failed == 0
            ? "conformance: all \(results.count) checks passed\n"
            : "conformance: \(failed) of \(results.count) checks failed\n"
        return text
    }

    static func jsonLines(_ results: [ConformanceResult]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return results.compactMap { try? encoder.encode($0) }.map { String(decoding: $0, as: UTF8.self) + "\n" }
            .joined()
    }
}
