import AccessCore
import ArgumentParser
import Foundation
import SiteContract

/// `readersim site reader add|remove|list`: the reader controllers the site provisions
/// (docs/site-api.md §7), each enrolled by its public key.
struct SiteReaderCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reader", abstract: "Enroll reader controllers (docs/site-api.md §7).",
        subcommands: [Add.self, Remove.self, List.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Enroll a reader controller's public key (what `readersim reader-key` prints).")

        @OptionGroup var database: SiteDatabaseOptions
        @Option(help: "A name for people.") var name: String
        @Option(help: "The controller's public key: base64 X9.63 P-256.") var publicKey: String
        @Option(
            help: "The readers it serves, as reader ids separated by commas (2A01,2A02): what its certificates name.")
        var readers: String?

        func run() throws {
            guard !name.isEmpty, name.utf8.count <= 128 else { throw ValidationError("--name must be 1 to 128 bytes") }
            guard let key = SiteText.publicKey(publicKey) else {
                throw ValidationError("--public-key must be a base64 X9.63 P-256 public key (65 bytes)")
            }
            var served: [ReaderID] = []
            for text in (readers ?? "").split(separator: ",", omittingEmptySubsequences: false) where readers != nil {
                guard let id = ReaderID(String(text)) else {
                    throw ValidationError("--readers: '\(text)' is not a reader id (1 to 8 hex digits, not 0)")
                }
                guard !served.contains(id) else { throw ValidationError("--readers names \(id) twice") }
                served.append(id)
            }
            guard served.count <= 1024 else { throw ValidationError("--readers names more than 1024 readers") }
            let store = try database.open()
            guard try store.addReader(name: name, publicKey: key, readers: served, now: Date().timeIntervalSince1970)
            else {
                throw ValidationError("that key is already enrolled, as \(ReaderKeyID(publicKey: key))")
            }
            SiteOutput.line([
                "keyID": ReaderKeyID(publicKey: key).description, "name": name,
                "readers": served.map(\.description),
            ])
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Withdraw a reader controller: its next provisioning call is refused.")

        @OptionGroup var database: SiteDatabaseOptions
        @Argument(help: "The controller's key id (32 hex digits).") var keyID: String

        func run() throws {
            guard let id = ReaderKeyID(keyID) else { throw ValidationError("a key id is 32 hex digits") }
            guard try database.open().removeReader(id) else { throw ValidationError("no enrolled reader \(id)") }
            SiteOutput.line(["keyID": id.description, "removed": true])
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List enrolled reader controllers.")

        @OptionGroup var database: SiteDatabaseOptions

        func run() throws {
            for reader in try database.open().readers() {
                SiteOutput.line([
                    "keyID": reader.keyID.description, "name": reader.name, "removed": reader.removed,
                    "readers": reader.readers.map(\.description),
                ])
            }
        }
    }
}
