import AccessCore
import AccessDaemon
import ArgumentParser
import BlueZ
import Crypto
import Foundation
import ReaderSimulation
import UnixSignals

/// `readersim readers --config FILE`: brings up the readers a file describes on BlueZ.
struct ReadersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "readers",
        abstract: "Bring up simulated readers on a BlueZ adapter (config/readersim.example.toml).",
        discussion: """
            Every decision, action and fault is printed as one JSON line on standard output. \
            One reader per adapter can be connected to: readers on one adapter share its address \
            and GATT database, so give each reader its own adapter (`adapter = "hci1"`).
            """)

    @Option(help: "The readers' file.") var config: String
    @Option(help: "Adapter for readers that name none.") var adapter = "hci0"
    @Option(help: "D-Bus to reach bluetoothd on: system, or a bus address.") var bus = "system"
    @Flag(help: "Check the file and exit.") var check = false

    func run() async throws {
        guard let bytes = FileManager.default.contents(atPath: config) else {
            throw ValidationError("cannot read \(config): \(String(cString: strerror(errno)))")
        }
        let file: SimulatedReadersFile
        do {
            file = try SimulatedReadersFile.parse(bytes: Array(bytes), file: config)
        } catch {
            throw ValidationError(error.description)
        }
        var perAdapter: [String: String] = [:]
        for reader in file.readers {
            let chosen = reader.adapter ?? adapter
            if let other = perAdapter[chosen] {
                throw ValidationError(
                    "readers \(other) and \(reader.name) are both on \(chosen): one reader per adapter (see --help)")
            }
            perAdapter[chosen] = reader.name
        }
        if check {
            print("\(config): OK, \(file.readers.count) reader(s)")
            return
        }
        let key = try ReaderKeyCommand.load(file.keyFile)
        let client = try SiteClient(caFile: file.caFile, timeout: .seconds(15))
        // Shut down on every path, a failure included.
        do {
            try await serve(file, key: key, client: client)
        } catch {
            await client.shutdown()
            throw error
        }
        await client.shutdown()
    }

    private func serve(_ file: SimulatedReadersFile, key: P256.Signing.PrivateKey, client: SiteClient) async throws {
        let provisioning = ReaderProvisioningSync(client: client, site: file.siteURL, key: key) { event, fields in
            var object = fields
            object["event"] = event
            SiteOutput.line(object)
        }
        // The readers advertise the site's tag and sign with its key: nothing to do before
        // the site has answered once. A site still starting gets 30 s.
        var attempt = 0
        while true {
            do {
                try await provisioning.catchUp()
                break
            } catch {
                attempt += 1
                guard attempt < 30, case .unreachable = error else {
                    throw ValidationError("the site did not provision this reader controller: \(error)")
                }
                try await Task.sleep(for: .seconds(1))
            }
        }
        let connection = try DBusConnection(address: bus == "system" ? nil : bus)
        let readers = file.readers.map {
            SimulatedReader(
                configuration: $0, adapter: $0.adapter ?? adapter, provisioning: provisioning,
                connection: connection)
        }
        // SIGTERM/SIGINT: unregister cleanly, so bluetoothd stops advertising at once.
        let stop = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for reader in readers {
                group.addTask { try await reader.run() }
            }
            group.addTask { await provisioning.follow() }
            group.addTask {
                for await _ in stop { return }
            }
            do {
                try await group.next()
            } catch {
                group.cancelAll()
                throw error
            }
            group.cancelAll()
            while !group.isEmpty { _ = try? await group.next() }
        }
        connection.close()
    }
}
