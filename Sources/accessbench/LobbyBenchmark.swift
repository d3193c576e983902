import AccessJSON
import ArgumentParser
import BlueZTestSupport
import ControlSocket
import Foundation

/// `accessbench lobby`: a kiosk in a lobby full of phones (issue #31). The real accessd on
/// dbusmock hears 100 readers advertising at 10 Hz and a crowd of phones advertising as fast
/// as dbusmock can send, each phone changing its address every `--rotate` seconds (BlueZ
/// forgets the old device and reports a new one). Printed every 30 s: accessd's RSS, the
/// phones' advertisements sent, and whether every reader is still heard (none went
/// `reader.unavailable`, each heard within the last 2 s).
struct LobbyBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lobby",
        abstract:
            "RSS and readers heard while a crowd of phones rotating their addresses advertises beside 100 readers."
    )

    @Option(help: "The accessd to measure (default: the one built beside this binary).") var accessd: String?
    @Option(help: "Seconds to run.") var seconds: Int = 600
    @Option(help: "Phones in the lobby.") var phones: Int = 2000
    @Option(help: "Readers, advertising at 10 Hz.") var readers: Int = 100
    @Option(help: "Seconds between a phone's address changes.") var rotate: Int = 15

    func run() async throws {
        guard (30...7200).contains(seconds), (0...10_000).contains(phones), (1...1000).contains(readers),
            (1...3600).contains(rotate)
        else {
            throw ValidationError("--seconds 30…7200, --phones 0…10000, --readers 1…1000, --rotate 1…3600")
        }
        let daemon = try await BenchDaemon(config: "[log]\nlevel = \"warning\"\n", executable: accessd)
        defer { daemon.stop() }
        let pid = daemon.process.pid
        let status = try ControlConnection(path: daemon.socketPath)
        let events = try ControlConnection(path: daemon.socketPath)
        _ = try events.call("events.subscribe", ["kinds": [.string(EventKind.readerUnavailable.rawValue)]]).get()
        try await daemon.mock.run(python: MockReaders.appear(readers, from: 0))
        try await daemon.mock.run(python: MockReaders.advertise(readers, rssi: -70))
        try await ReadersBenchmark.waitForReaders(readers, status)
        print(
            "lobby: accessd on dbusmock; \(readers) readers at 10 Hz; \(phones) phones advertising as fast as dbusmock "
                + "sends, a new address each every \(rotate) s; \(seconds) s")
        print("  start: RSS \(Self.megabytes(ReadersBenchmark.statusKB(pid, "VmRSS"))) with the readers heard")

        let start = ContinuousClock.now
        var nextReport = start + .seconds(30)
        var nextReaders = start
        var generation = 0
        var nextRotation = start
        var phoneAdvertisements = 0
        var unavailable = 0
        var staleReaders = 0
        var resident: [Int] = []
        while ContinuousClock.now < start + .seconds(seconds) {
            if ContinuousClock.now >= nextRotation {
                try await daemon.mock.run(python: Self.rotatePhones(phones, to: generation + 1, from: generation))
                generation += 1
                nextRotation += .seconds(rotate)
            }
            try await daemon.mock.run(python: Self.phonesAdvertise(phones, generation: generation))
            phoneAdvertisements += phones
            if ContinuousClock.now >= nextReaders {
                try await daemon.mock.run(python: MockReaders.advertise(readers, rssi: -70 - generation % 3))
                nextReaders += .milliseconds(100)
            }
            while events.waitReadable(timeout: .zero), let notification = try? events.nextNotification() {
                if case .readerUnavailable? = ControlEvent(eventNotification: notification) { unavailable += 1 }
            }
            if ContinuousClock.now >= nextReport {
                let listed = try status.call("readers.list").get()["readers"]?.array ?? []
                let heard = listed.filter { ($0["heardSecondsAgo"]?.number ?? 99) <= 2 }.count
                if heard < readers { staleReaders += 1 }
                let rss = ReadersBenchmark.statusKB(pid, "VmRSS")
                resident.append(rss)
                let elapsed = Int((ContinuousClock.now - start).components.seconds)
                print(
                    "  \(elapsed) s: RSS \(Self.megabytes(rss)), \(phoneAdvertisements / max(elapsed, 1)) phone "
                        + "advertisements/s, readers listed \(listed.count), heard in the last 2 s \(heard), "
                        + "reader.unavailable \(unavailable)")
                nextReport += .seconds(30)
            }
        }
        let growth = (resident.last ?? 0) - (resident.first ?? 0)
        print(
            "  end: RSS first report → last \(Self.megabytes(resident.first ?? 0)) → \(Self.megabytes(resident.last ?? 0)) "
                + "(\(growth >= 0 ? "+" : "")\(Self.megabytes(growth))); reader.unavailable \(unavailable); "
                + "reports with a reader not heard for 2 s: \(staleReaders) of \(resident.count)")
    }

    static func megabytes(_ kb: Int) -> String { String(format: "%.1f MB", Double(kb) / 1024) }

    /// Phone `i` of `generation`: its object path and address (a random-looking private address).
    private static let phone = """
            path = '/org/bluez/hci0/dev_7A_%02X_%02X_%02X_00_00' % (g % 256, i // 256, i % 256)
            address = '7A:%02X:%02X:%02X:00:00' % (g % 256, i // 256, i % 256)
        """

    /// The phones of generation `from` are forgotten and those of `to` appear.
    static func rotatePhones(_ count: Int, to: Int, from: Int) -> String {
        """
        manager = objects['/']
        for i in range(0, \(count)):
            g = \(from)
        \(phone)
            if path in objects:
                self.RemoveObject(path)
                manager.EmitSignal('org.freedesktop.DBus.ObjectManager', 'InterfacesRemoved', 'oas',
                                   [dbus.ObjectPath(path), ['org.bluez.Device1']])
            g = \(to)
        \(phone)
            properties = {'Address': dbus.String(address), 'Adapter': dbus.ObjectPath('/org/bluez/hci0'),
                          'RSSI': dbus.Int16(-65), 'Connected': dbus.Boolean(False), 'AddressType': 'random'}
            self.AddObject(path, 'org.bluez.Device1', properties, [])
            manager.EmitSignal('org.freedesktop.DBus.ObjectManager', 'InterfacesAdded', 'oa{sa{sv}}',
                               [dbus.ObjectPath(path), {'org.bluez.Device1': properties}])
        """
    }

    /// One advertisement of every phone: RSSI and Apple-style manufacturer data, as BlueZ reports it.
    static func phonesAdvertise(_ count: Int, generation: Int) -> String {
        """
        for i in range(0, \(count)):
            g = \(generation)
        \(phone)
            objects[path].EmitSignal('org.freedesktop.DBus.Properties', 'PropertiesChanged', 'sa{sv}as',
                ['org.bluez.Device1', {'RSSI': dbus.Int16(-60 - i % 30), 'ManufacturerData': dbus.Dictionary(
                    {dbus.UInt16(76): dbus.Array([16, 5, 1, i % 256], signature='y')}, signature='qv')}, []])
        """
    }
}
