import ArgumentParser
import Foundation

/// `readersim site events`: the access events holders uploaded (§4.5), a JSON line each.
struct SiteEventsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events", abstract: "List the access events holders uploaded (docs/site-api.md §4.5).")

    @OptionGroup var database: SiteDatabaseOptions
    @Option(help: "Only this credential's (its id or a unique prefix).") var credential: String?

    func run() throws {
        let store = try database.open()
        var only: SiteDatabase.CredentialRow?
        if let credential {
            guard let row = try store.resolveCredential(credential) else {
                throw ValidationError("no credential (or more than one) matches \(credential)")
            }
            only = row
        }
        for row in try store.auditEvents(of: only?.id) {
            let data =
                (try? JSONSerialization.jsonObject(with: Data(row.data.utf8), options: [.fragmentsAllowed])) ?? NSNull()
            SiteOutput.line([
                "credential": row.credential, "seq": row.seq, "time": row.time, "kind": row.kind,
                "data": data, "copies": row.copies,
            ])
        }
    }
}
