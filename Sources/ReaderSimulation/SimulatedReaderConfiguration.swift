import AccessCore

// readersim's reader file, in a library of its own so that the fuzzer (accessfuzz) can
// reach the parser: an executable's code cannot be linked into another executable.

/// One simulated reader, as `config/readersim.example.toml` documents it.
public struct SimulatedReaderConfiguration: Sendable {
    public enum Decision: Hashable, Sendable {
        /// Grant active credentials, deny suspended ones, refuse revoked and unknown ones.
        case site
        case grant
        case deny(AccessDecision)
    }

    /// Misbehaviour for testing accessd (and phones).
    public enum Fault: String, Sendable, CaseIterable {
        case none
        /// Every message is sent `fault_delay` seconds late.
        case late
        /// The link is dropped when the credential's response arrives.
        case drop
        /// A malformed frame instead of the challenge.
        case malformed
        /// Challenges and decisions signed with a key that is not the site's, and no certificate
        /// (a spoofed reader: it cannot have one).
        case wrongKey = "wrong-key"
        /// Advertising stops `fault_delay` seconds after start.
        case silent
        /// The same challenge nonce at every connection: a recorded response is accepted
        /// again (a relay replays it).
        case sameNonce = "same-nonce"
        /// Never gives up on a holder that stops answering.
        case noTimeout = "no-timeout"
        /// Advertises a site tag that is not its site's.
        case wrongSite = "wrong-site"
    }

    public var name: String
    public var id: ReaderID
    public var displayName: String
    public var kind: ReaderKind
    public var adapter: String?
    public var intervalMilliseconds: UInt32 = 100
    public var txPower: Int8 = -59
    public var autoConnectPathLoss: UInt8 = 20
    public var manualConnectPathLoss: UInt8 = 40
    public var autoConnect = true
    public var manualConnect = true
    public var secondFactorRequired = false
    /// How long the reader waits for the second-factor response: at least the 30 s
    /// reader-protocol §6 requires.
    public var secondFactorWait: Duration = .seconds(30)
    /// Presence advertisements while a central is connected (docs/reader-protocol.md §2).
    public var presence = true
    /// The highest protocol version it speaks: 3 signs, for a holder that asks, with the
    /// controller's own key under the site's certificate (docs/reader-protocol.md §1.1) and
    /// stands its challenges as 2 does; 2 offers standing challenges through the hold point
    /// (§6) and signs with the site key; 1 is a version 1 reader, without a hold point. 1 and
    /// 2 work only at a site that gives readers its key (`site serve --legacy-readers`).
    public var protocolVersion: UInt8 = 3
    public var actions: [ReaderAction] = []
    public var actionOutcomes: [Int8: AccessDecision] = [:]
    public var decision: Decision = .site
    public var mode: AccessMode = .access
    public var fault: Fault = .none
    public var faultDelay: Duration = .seconds(8)

    /// What the reader advertises; with `presence`, the presence advertisement sent while
    /// a central is connected.
    public func advertisement(siteTag: SiteTag, presence: Bool = false) -> ReaderAdvertisement {
        var flags: ReaderFlags = presence ? [.presence] : []
        if autoConnect { flags.insert(.autoConnectEnabled) }
        if manualConnect { flags.insert(.manualConnectEnabled) }
        if secondFactorRequired { flags.insert(.secondFactorRequired) }
        if !actions.isEmpty { flags.insert(.actionsEnabled) }
        return ReaderAdvertisement(
            kind: kind, flags: flags, readerID: id, txPower: txPower,
            autoConnectPathLoss: autoConnectPathLoss, manualConnectPathLoss: manualConnectPathLoss,
            siteTag: siteTag)
    }
}

/// The whole file: the site the readers are provisioned by, and the readers.
public struct SimulatedReadersFile: Sendable {
    /// The site API's base URL (docs/site-api.md §7).
    public var siteURL: SiteAddress
    /// The reader controller's private key (PEM), enrolled at the site.
    public var keyFile: String
    /// CAs to trust for an `https://` site instead of the system's.
    public var caFile: String?
    public var readers: [SimulatedReaderConfiguration]

    public struct Failure: Error, CustomStringConvertible {
        public var file: String
        public var line: Int?
        public var reason: String
        public var description: String { "\(file)\(line.map { ":\($0)" } ?? ""): \(reason)" }
    }

    public static let readerKeys: Set<String> = [
        "id", "name", "kind", "adapter", "interval_ms", "tx_power", "auto_connect_path_loss",
        "manual_connect_path_loss",
        "auto_connect", "manual_connect", "second_factor", "second_factor_wait", "presence", "protocol_version",
        "actions", "action_outcomes",
        "decision", "mode",
        "fault", "fault_delay",
    ]

    /// A file's bytes: UTF-8 (a bad byte is refused with its line), then `parse`.
    public static func parse(bytes: [UInt8], file: String) throws(Failure) -> SimulatedReadersFile {
        let text: String
        do {
            text = try ConfigurationSyntax.text(of: bytes)
        } catch {
            throw Failure(file: file, line: error.line, reason: error.reason)
        }
        return try parse(text, file: file)
    }

    public static func parse(_ text: String, file: String) throws(Failure) -> SimulatedReadersFile {
        let document: ConfigurationSyntax.Document
        do {
            document = try ConfigurationSyntax.parse(text)
        } catch {
            throw Failure(file: file, line: error.line, reason: error.reason)
        }
        if let stray = document.sections[""]?.first {
            throw Failure(
                file: file, line: stray.value.line, reason: "\(stray.key) must be inside [site] or a reader's section")
        }
        guard let site = document.sections["site"] else {
            throw Failure(file: file, line: nil, reason: "a [site] section with url and key is required")
        }
        for (key, entry) in site where !["url", "key", "ca_file"].contains(key) {
            throw Failure(
                file: file, line: entry.line, reason: "unknown key '\(key)' in [site] (known: url, key, ca_file)")
        }
        guard case .string(let urlText)? = site["url"]?.value else {
            throw Failure(file: file, line: document.sectionLines["site"], reason: "[site] url must be the site's URL")
        }
        let siteURL: SiteAddress
        do {
            siteURL = try SiteAddress.parseHost(urlText)
            try siteURL.checkTransport()
        } catch {
            throw Failure(file: file, line: site["url"]?.line, reason: "[site] url: \(error)")
        }
        guard case .string(let keyFile)? = site["key"]?.value, !keyFile.isEmpty else {
            throw Failure(
                file: file, line: site["key"]?.line ?? document.sectionLines["site"],
                reason: "[site] key must name the reader controller's key file (readersim reader-key)")
        }
        var caFile: String?
        if let entry = site["ca_file"] {
            guard case .string(let path) = entry.value, !path.isEmpty else {
                throw Failure(file: file, line: entry.line, reason: "[site] ca_file must name a PEM file")
            }
            caFile = path
        }
        var readers: [SimulatedReaderConfiguration] = []
        for name in document.sections.keys.filter({ $0 != "site" }).sorted(by: {
            (document.sectionLines[$0] ?? 0) < (document.sectionLines[$1] ?? 0)
        }) {
            readers.append(
                try reader(name, document.sections[name] ?? [:], line: document.sectionLines[name], file: file))
        }
        guard !readers.isEmpty else {
            throw Failure(file: file, line: nil, reason: "no readers: add a [name] section per reader")
        }
        var ids: Set<ReaderID> = []
        for reader in readers where !ids.insert(reader.id).inserted {
            throw Failure(
                file: file, line: document.sectionLines[reader.name], reason: "reader id \(reader.id) is used twice")
        }
        return SimulatedReadersFile(siteURL: siteURL, keyFile: keyFile, caFile: caFile, readers: readers)
    }

    private static func reader(
        _ name: String, _ keys: [String: ConfigurationSyntax.Entry], line: Int?,
        file: String
    ) throws(Failure) -> SimulatedReaderConfiguration {
        func fail(_ key: String?, _ reason: String) -> Failure {
            Failure(file: file, line: key.flatMap { keys[$0]?.line } ?? line, reason: "[\(name)] \(reason)")
        }
        for (key, entry) in keys where !readerKeys.contains(key) {
            throw Failure(
                file: file, line: entry.line,
                reason: "[\(name)] unknown key '\(key)' (known: \(readerKeys.sorted().joined(separator: ", ")))")
        }
        func string(_ key: String) throws(Failure) -> String? {
            guard let value = keys[key]?.value else { return nil }
            guard case .string(let text) = value else { throw fail(key, "\(key) must be a string") }
            return text
        }
        func int(_ key: String, _ range: ClosedRange<Int>) throws(Failure) -> Int? {
            guard let value = keys[key]?.value else { return nil }
            guard case .integer(let number) = value, range.contains(number) else {
                throw fail(key, "\(key) must be a whole number in \(range.lowerBound)...\(range.upperBound)")
            }
            return number
        }
        func bool(_ key: String) throws(Failure) -> Bool? {
            guard let value = keys[key]?.value else { return nil }
            guard case .bool(let flag) = value else { throw fail(key, "\(key) must be true or false") }
            return flag
        }
        func strings(_ key: String) throws(Failure) -> [String] {
            guard let value = keys[key]?.value else { return [] }
            guard case .array(let items) = value else { throw fail(key, "\(key) must be a list of strings") }
            var result: [String] = []
            for item in items {
                guard case .string(let text) = item else { throw fail(key, "\(key) must be a list of strings") }
                result.append(text)
            }
            return result
        }
        func decision(_ text: String, key: String) throws(Failure) -> AccessDecision {
            guard let value = AccessDecision.allCases.first(where: { $0.description == text }) else {
                throw fail(key, "\(text) is not an AccessDecision (e.g. granted, deniedZone, deniedLockdown)")
            }
            return value
        }

        guard let idText = try string("id"), let id = ReaderID(idText) else {
            throw fail("id", "id must be 1 to 8 hex digits, not 0")
        }
        let kindText = try string("kind") ?? "gallagher"
        guard let kind = ReaderKind.allCases.first(where: { $0.description == kindText }) else {
            throw fail("kind", "kind must be gallagher or aperio")
        }
        var c = SimulatedReaderConfiguration(name: name, id: id, displayName: try string("name") ?? name, kind: kind)
        guard c.displayName.utf8.count <= 12 else {
            throw fail("name", "name must be at most 12 bytes (it shares the advertisement's 31 bytes)")
        }
        if let adapter = try string("adapter") {
            guard adapter.hasPrefix("hci"), Int(adapter.dropFirst(3)) != nil else {
                throw fail("adapter", "adapter must look like hci0")
            }
            c.adapter = adapter
        }
        if let value = try int("interval_ms", 20...10240) { c.intervalMilliseconds = UInt32(value) }
        if let value = try int("tx_power", -127...20) { c.txPower = Int8(value) }
        if let value = try int("auto_connect_path_loss", 0...255) { c.autoConnectPathLoss = UInt8(value) }
        if let value = try int("manual_connect_path_loss", 0...255) { c.manualConnectPathLoss = UInt8(value) }
        guard c.autoConnectPathLoss <= c.manualConnectPathLoss else {
            throw fail("auto_connect_path_loss", "auto_connect_path_loss must not exceed manual_connect_path_loss")
        }
        c.autoConnect = try bool("auto_connect") ?? c.autoConnect
        c.manualConnect = try bool("manual_connect") ?? c.manualConnect
        c.secondFactorRequired = try bool("second_factor") ?? c.secondFactorRequired
        if let seconds = try int("second_factor_wait", 30...300) { c.secondFactorWait = .seconds(seconds) }
        c.presence = try bool("presence") ?? c.presence
        if let value = try int("protocol_version", 1...3) { c.protocolVersion = UInt8(value) }
        for entry in try strings("actions") {
            let parts = entry.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let actionID = Int8(parts[0]), !parts[1].isEmpty, parts[1].utf8.count <= 32 else {
                throw fail("actions", "each action is \"ID:NAME\" (ID -128...127, NAME up to 32 bytes)")
            }
            // An id names one action: a holder refuses a list naming one twice (§6).
            guard !c.actions.contains(where: { $0.id == actionID }) else {
                throw fail("actions", "action \(actionID) is listed twice")
            }
            c.actions.append(ReaderAction(id: actionID, name: String(parts[1])))
        }
        guard c.actions.count <= 16 else { throw fail("actions", "at most 16 actions") }
        for entry in try strings("action_outcomes") {
            let parts = entry.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let actionID = Int8(parts[0]) else {
                throw fail("action_outcomes", "each outcome is \"ID:DECISION\" (e.g. \"2:deniedLockdown\")")
            }
            c.actionOutcomes[actionID] = try decision(String(parts[1]), key: "action_outcomes")
        }
        if let text = try string("decision") {
            switch text {
            case "site": c.decision = .site
            case "grant": c.decision = .grant
            default:
                guard text.hasPrefix("deny:") else {
                    throw fail("decision", "decision is site, grant or deny:DECISION")
                }
                c.decision = .deny(try decision(String(text.dropFirst(5)), key: "decision"))
            }
        }
        if let text = try string("mode") {
            guard let mode = AccessMode.allCases.first(where: { $0.description == text }) else {
                throw fail(
                    "mode", "mode must be one of \(AccessMode.allCases.map(\.description).joined(separator: ", "))")
            }
            c.mode = mode
        }
        if let text = try string("fault") {
            guard let fault = SimulatedReaderConfiguration.Fault(rawValue: text) else {
                throw fail(
                    "fault",
                    "fault must be one of \(SimulatedReaderConfiguration.Fault.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            c.fault = fault
        }
        if let seconds = try int("fault_delay", 0...600) { c.faultDelay = .seconds(seconds) }
        return c
    }
}
