import AccessCore
import ArgumentParser

@main
struct ReadersimCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "readersim",
        abstract: "Simulated Bluetooth LE readers and the site that issues credentials.",
        version: AccessCoreVersion.string,
        subcommands: [
            ReadersCommand.self, ReaderKeyCommand.self, AdvertisementCommand.self, SiteCommand.self,
            ConformanceCommand.self,
        ]
    )
}

/// Prints the advertising data a reader with the given attributes sends, so that a field
/// engineer can compare it with what a scanner (`btmon`, `bluetoothctl`) shows.
struct AdvertisementCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "advertisement",
        abstract: "Print a reader's advertising data (hex), per docs/reader-protocol.md."
    )

    @Option(help: "Reader id, up to eight hex digits.") var id: String
    @Option(help: "gallagher or aperio.") var kind: String = "gallagher"
    @Option(help: "TX power at 1 m, dBm.") var txPower: Int = -59
    @Option(help: "autoConnectPathLoss, dB.") var autoConnectPathLoss: Int = 60
    @Option(help: "manualConnectPathLoss, dB.") var manualConnectPathLoss: Int = 85
    @Option(help: "Site tag, up to eight hex digits.") var site: String = "1"
    @Flag(help: "Clear the auto-connect flag.") var noAutoConnect = false
    @Flag(help: "Clear the manual-connect flag.") var noManualConnect = false
    @Flag(help: "Set the second-factor-required flag.") var secondFactor = false
    @Flag(help: "Set the actions-available flag.") var actions = false

    func run() throws {
        guard let readerID = ReaderID(id) else { throw ValidationError("--id must be 1 to 8 hex digits, not 0") }
        guard let readerKind = ReaderKind.allCases.first(where: { $0.description == kind }) else {
            throw ValidationError("--kind must be gallagher or aperio")
        }
        guard let siteValue = UInt32(site, radix: 16) else { throw ValidationError("--site must be hex") }
        guard let tx = Int8(exactly: txPower), let auto = UInt8(exactly: autoConnectPathLoss),
            let manual = UInt8(exactly: manualConnectPathLoss)
        else { throw ValidationError("--tx-power must fit -128...127, path losses 0...255") }
        var flags: ReaderFlags = []
        if !noAutoConnect { flags.insert(.autoConnectEnabled) }
        if !noManualConnect { flags.insert(.manualConnectEnabled) }
        if secondFactor { flags.insert(.secondFactorRequired) }
        if actions { flags.insert(.actionsEnabled) }
        let advertisement = ReaderAdvertisement(
            kind: readerKind, flags: flags, readerID: readerID, txPower: tx,
            autoConnectPathLoss: auto, manualConnectPathLoss: manual, siteTag: SiteTag(siteValue))
        // Round-trip through the parser so that inconsistent values are refused here too.
        do {
            _ = try ReaderAdvertisement(serviceData: advertisement.serviceData)
        } catch {
            throw ValidationError("refused by the protocol: \(error)")
        }
        print("serviceData \(advertisement.serviceData.hexString)")
        print("advertisingData \(advertisement.legacyAdvertisingData.hexString)")
    }
}
