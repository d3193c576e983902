import AccessCore
import AccessJSON
import ArgumentParser
import Crypto
import Foundation
import NIOSSL
import SiteContract

/// `readersim site …`: a site that issues credentials (docs/site-api.md), kept in one SQLite
/// file; its readers get their keys and credentials through the site API (§7).
struct SiteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "site",
        abstract: "Run a simulated site: invitations, credentials, items (docs/site-api.md).",
        subcommands: [
            SiteInitCommand.self, SiteServeCommand.self, SiteInviteCommand.self, SiteCredentialsCommand.self,
            SiteSuspendCommand.self, SiteResumeCommand.self, SiteRevokeCommand.self, SiteItemCommand.self,
            SiteEventsCommand.self, SiteReaderCommand.self,
        ]
    )
}

struct SiteDatabaseOptions: ParsableArguments {
    @Option(help: "The site's database file (created on first use).") var db: String

    func open() throws -> SiteDatabase {
        do {
            return try SiteDatabase(path: db)
        } catch {
            throw ValidationError("cannot open the site database \(db): \(error)")
        }
    }
}

struct SiteInitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "init", abstract: "Create a site with a name and tag.")

    @OptionGroup var database: SiteDatabaseOptions
    @Option(help: "The site's name.") var name = "Simulated site"
    @Option(help: "The site tag readers advertise, up to eight hex digits.") var tag = "1"

    func run() throws {
        guard let value = UInt32(tag, radix: 16), value != 0 else {
            throw ValidationError("--tag must be 1 to 8 hex digits, not 0")
        }
        let site = try database.open().site(creatingWithName: name, tag: SiteTag(value))
        SiteOutput.line([
            "name": site.name, "tag": site.tag.description,
            "publicKey": Base64.encode(Array(site.key.publicKey.x963Representation)),
        ])
    }
}

struct SiteServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Serve the site API over HTTP(S).")

    @OptionGroup var database: SiteDatabaseOptions
    @Option(help: "Address and port to listen on (port 0: any free port).") var listen = "127.0.0.1:8700"
    @Option(help: "PEM certificate chain: serve HTTPS.") var tlsCert: String?
    @Option(help: "PEM private key for --tls-cert.") var tlsKey: String?
    @Option(help: "Misbehave, to test clients: garbage or hang.") var fault: String?
    @Flag(help: "Serve no change channel (§4.4), as a site of the API before it.") var noChanges = false
    @Flag(help: "Misbehave: answer every change-channel call at once with a new version.")
    var churnChanges = false
    @Flag(help: "Take no audit events (§4.5), as a site of the API before it.") var noEvents = false
    @Option(help: "Seconds each controller certificate is valid (reader protocol §1.1): 2 to 604800.")
    var certificateValidity: UInt32 = 86_400
    @Flag(
        help: """
            Allow reader protocol versions 1-2: every provisioning page then carries the site's \
            private key, so any reader controller can speak for every reader of the site (reader \
            protocol §1.1). Without it readers get certificates only and speak version 3.
            """)
    var legacyReaders = false

    func run() async throws {
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]),
            (0...65535).contains(port)
        else { throw ValidationError("--listen must be HOST:PORT") }
        var host = String(listen[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var faultMode: SiteHTTPServer.Fault?
        if let fault {
            guard let mode = SiteHTTPServer.Fault(rawValue: fault) else {
                throw ValidationError("--fault must be garbage or hang")
            }
            faultMode = mode
        }
        var tls: NIOSSLContext?
        switch (tlsCert, tlsKey) {
        case (nil, nil): break
        case (let cert?, let key?):
            let chain = try NIOSSLCertificate.fromPEMFile(cert).map { NIOSSLCertificateSource.certificate($0) }
            let configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: chain,
                privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
            tls = try NIOSSLContext(configuration: configuration)
        default: throw ValidationError("--tls-cert and --tls-key go together")
        }
        guard (2...ControllerCertificate.maximumValidity).contains(certificateValidity) else {
            throw ValidationError("--certificate-validity must be 2 to 604800 seconds")
        }
        let store = try database.open()
        _ = try store.site()
        try await SiteHTTPServer(
            api: SiteAPI(
                database: store, servesChanges: !noChanges, servesEvents: !noEvents, churnsChanges: churnChanges,
                certificateValidity: certificateValidity, givesSiteKey: legacyReaders),
            fault: faultMode
        ).run(host: host, port: port, tls: tls)
    }
}

struct SiteInviteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invite", abstract: "Issue an invitation; print its code and URL.")

    @OptionGroup var database: SiteDatabaseOptions
    @Option(help: "The cardholder's name.") var name: String
    @Flag(help: "Ask this cardholder for a second factor (PIN).") var secondFactor = false
    @Option(help: "Seconds until the invitation expires.") var expiresIn: Double = 7 * 24 * 3600
    @Option(help: "The site's base URL, for the printed invitation URL.") var url = "http://127.0.0.1:8700"
    @Flag(help: "Print {\"code\":…,\"url\":…} instead of text.") var json = false
    @Option(
        help: """
            Issue this many (1…10000), one per kiosk of a fleet: cardholders NAME 1 to NAME N \
            (zero-padded to N's width), one line each ({"name":…,"code":…,"url":…} with --json).
            """) var count = 1

    func run() throws {
        guard !name.isEmpty, name.utf8.count <= 120 else { throw ValidationError("--name must be 1 to 120 bytes") }
        guard (1...10_000).contains(count) else { throw ValidationError("--count must be 1 to 10000") }
        let base: SiteAddress
        do {
            base = try SiteAddress.parseHost(url)
        } catch {
            throw ValidationError("--url: \(error)")
        }
        let store = try database.open()
        _ = try store.site()
        let now = Date().timeIntervalSince1970
        let digits = String(count).count
        for index in 1...count {
            let number = String(index)
            let cardholder =
                count == 1 ? name : name + " " + String(repeating: "0", count: digits - number.count) + number
            let code = try store.addInvitation(
                cardholder: cardholder, secondFactor: secondFactor, expiresAt: now + expiresIn, now: now)
            let invitationURL = base.url("/v1/invitations/\(code.canonical)")
            if json {
                SiteOutput.line(
                    count == 1
                        ? ["code": code.description, "url": invitationURL]
                        : ["name": cardholder, "code": code.description, "url": invitationURL])
            } else if count == 1 {
                print("code \(code)")
                print("url  \(invitationURL)")
            } else {
                print("\(cardholder)\t\(code)\t\(invitationURL)")
            }
        }
    }
}

struct SiteCredentialsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "credentials", abstract: "List registered credentials.")

    @OptionGroup var database: SiteDatabaseOptions

    func run() throws {
        for credential in try database.open().credentials() {
            var object: [String: Any] = [
                "id": credential.id.description, "state": credential.state.rawValue,
                "cardholderName": credential.cardholder, "secondFactor": credential.secondFactor,
            ]
            object["deviceName"] = credential.deviceName
            object["deleted"] = credential.deleted
            object["secondFactorKeySet"] = credential.secondFactorKey != nil
            // As accessd shows it (docs/site-api.md §3.1): an administrator matches the two.
            object["fingerprint"] = KeyFingerprint.of(credential.publicKey)
            SiteOutput.line(object)
        }
    }
}

/// Suspend, resume and revoke: the site administrator's changes to a credential's state.
struct SiteStateChange: ParsableArguments {
    @OptionGroup var database: SiteDatabaseOptions
    @Argument(help: "The credential id (or a unique prefix of it).") var credential: String

    func apply(_ state: CredentialState) throws {
        let store = try database.open()
        guard let row = try store.resolveCredential(credential) else {
            throw ValidationError("no credential (or more than one) matches \(credential)")
        }
        guard row.state != .revoked || state == .revoked else {
            throw ValidationError("a revoked credential stays revoked")
        }
        try store.setState(row.id, state)
        SiteOutput.line(["id": row.id.description, "state": state.rawValue])
    }
}

struct SiteSuspendCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "suspend", abstract: "Suspend a credential (until resumed).")
    @OptionGroup var change: SiteStateChange
    func run() throws { try change.apply(.suspended) }
}

struct SiteResumeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume", abstract: "Make a suspended credential active again.")
    @OptionGroup var change: SiteStateChange
    func run() throws { try change.apply(.active) }
}

struct SiteRevokeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "revoke", abstract: "Revoke a credential for good.")
    @OptionGroup var change: SiteStateChange
    func run() throws { try change.apply(.revoked) }
}

struct SiteItemCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "item", abstract: "Add, update, remove or list items pushed to credentials.",
        subcommands: [Add.self, Update.self, Remove.self, List.self]
    )

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Push an item to a credential; prints its id.")

        @OptionGroup var database: SiteDatabaseOptions
        @Option(help: "The credential id (or a unique prefix).") var credential: String
        @Option(help: "aperio, salto or digitalId.") var type: String
        @Option(help: "A name people recognise (\"Store room lock\").") var name: String
        @Option(help: "Item id; generated when absent.") var id: String?
        @Option(parsing: .unconditional, help: "Valid from this time (Unix seconds, or +N/-N seconds from now).")
        var validFrom: String?
        @Option(parsing: .unconditional, help: "Valid until this time (Unix seconds, or +N/-N seconds from now).")
        var validUntil: String?

        /// Unix seconds, or seconds from now with a sign.
        static func time(_ text: String?) throws -> Int64? {
            guard let text else { return nil }
            guard let value = Int64(text) else {
                throw ValidationError("a time is Unix seconds, or +N/-N seconds from now")
            }
            return text.hasPrefix("+") || text.hasPrefix("-") ? Int64(Date().timeIntervalSince1970) + value : value
        }

        func run() throws {
            let store = try database.open()
            guard let row = try store.resolveCredential(credential) else {
                throw ValidationError("no credential (or more than one) matches \(credential)")
            }
            let site = try store.site()
            var payload: SiteItemContent
            var generator = SystemRandomNumberGenerator()
            func random(_ count: Int) -> [UInt8] {
                (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            }
            switch type {
            case "aperio":
                payload = SiteItemContent(
                    siteTag: site.tag.description,
                    aperio: AperioFields(identifier: random(8).hexString, key: Base64.encode(random(32))))
            case "salto":
                payload = SiteItemContent(data: ["keyId": .string(random(4).hexString)])
            case "digitalId":
                payload = SiteItemContent(data: [
                    "cardholder": .string(row.cardholder), "number": .string(random(4).hexString),
                ])
            default:
                throw ValidationError("--type must be aperio, salto or digitalId")
            }
            payload.validFrom = try Self.time(validFrom)
            payload.validUntil = try Self.time(validUntil)
            let itemID = id ?? "\(type)-\(random(6).hexString)"
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let data = try encoder.encode(payload)
            try store.addItem(
                id: itemID, credential: row.id, type: type, name: name,
                payload: String(decoding: data, as: UTF8.self))
            SiteOutput.line(["id": itemID, "credential": row.id.description, "type": type, "name": name])
        }
    }

    struct Update: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Rename an item or change its state.")

        @OptionGroup var database: SiteDatabaseOptions
        @Argument(help: "The item id.") var id: String
        @Option(help: "New name.") var name: String?
        @Option(help: "active, suspended or revoked.") var state: String?

        func run() throws {
            var newState: CredentialState?
            if let state {
                guard let parsed = CredentialState(rawValue: state) else {
                    throw ValidationError("--state must be active, suspended or revoked")
                }
                newState = parsed
            }
            guard try database.open().updateItem(id: id, name: name, state: newState) else {
                throw ValidationError("no item \(id)")
            }
            SiteOutput.line(["id": id, "updated": true])
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an item from its credential.")

        @OptionGroup var database: SiteDatabaseOptions
        @Argument(help: "The item id.") var id: String

        func run() throws {
            guard try database.open().removeItem(id: id) else { throw ValidationError("no item \(id)") }
            SiteOutput.line(["id": id, "removed": true])
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List items (secrets not shown).")

        @OptionGroup var database: SiteDatabaseOptions

        func run() throws {
            for item in try database.open().allItems() {
                SiteOutput.line([
                    "id": item.id, "credential": item.credentialID.description, "type": item.type,
                    "name": item.name, "state": item.state.rawValue,
                ])
            }
        }
    }
}
