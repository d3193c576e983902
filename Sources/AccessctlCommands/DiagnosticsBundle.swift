import AccessCore
import AccessJSON
import BlueZ
import BoundedFile
import ControlSocket
import FoundationEssentials
import Glibc
import Subprocess
import SystemPackage

/// `accessctl diagnose --bundle FILE` (issue #34, item 4): what support asks for when a kiosk
/// misbehaves, in one JSON file gathered without a login session of questions: the checks
/// `diagnose` made, accessd's status, readers and credentials (fingerprints, never keys), its
/// last events, the configuration's settings, and the machine's Bluetooth facts. Nothing in it
/// is a secret: accessd's answers and events carry none by design (docs/operations.md,
/// "Secrets at rest"), and the configuration goes in as its settings only, without comments,
/// with any value whose key names a secret replaced.
enum DiagnosticsBundle {
    /// The bundle's layout version.
    static let format = 1
    /// Events kept: the newest ones.
    static let eventCount: Int64 = 500
    /// The most of the configuration file read.
    static let configurationLimit = 65_536
    /// The least `--bundle-limit`: room for the checks, status, credentials and configuration.
    static let smallestLimit = 16_384

    /// Writes the bundle to `path` (`-`: standard output), within `limit` bytes when given.
    static func write(
        to path: String, checks: [Diagnose.Check], socket: String, configFile: String?, timeout: Duration,
        limit: Int? = nil
    ) throws {
        var bundle: [String: JSONValue] = [
            "bundle": .int(Int64(format)),
            "generatedAt": .string(Date().formatted(.iso8601)),
            "host": .string(ProcessInfo.processInfo.hostName),
            "accessctl": .string(AccessCoreVersion.string),
            "diagnose": .array(checks.map(json)),
            "system": system(),
        ]
        if let connection = try? ControlConnection(path: socket) {
            connection.answerTimeout = timeout
            for (key, method) in [
                ("status", ControlMethod.statusGet), ("readers", .readersList), ("credentials", .credentialsList),
            ] {
                bundle[key] = answer(connection, method)
            }
            let last = bundle["status"]?["lastSequence"]?.int ?? 0
            bundle["events"] = .array(events(socket: socket, after: max(0, last - eventCount), timeout: timeout))
        }
        if let file = configFile ?? bundle["status"]?["configFile"]?.string {
            bundle["configuration"] = configuration(file)
        }
        if let settings = bundle["configuration"]?["settings"]?.array?.compactMap(\.string),
            let listen = MetricsScrape.listen(in: settings)
        {
            switch MetricsScrape.samples(from: listen, timeout: timeout) {
            case .success(let samples): bundle["metrics"] = .array(samples.map(JSONValue.string))
            case .failure(let failure):
                bundle["metrics"] = .object(["listen": .string(listen), "error": .string("\(failure)")])
            }
        }
        let data = try limit.map { try fitted(bundle, within: $0) } ?? text(bundle)
        if path == "-" {
            print(String(decoding: data, as: UTF8.self), terminator: "")
            return
        }
        guard FileManager.default.createFile(atPath: path, contents: data, attributes: [.posixPermissions: 0o640])
        else { throw BundleError("cannot write \(path)") }
    }

    private static func text(_ bundle: [String: JSONValue]) -> Data {
        Data((JSONValue.object(bundle).jsonText + "\n").utf8)
    }

    /// The bundle within `limit` bytes: the oldest events left out first, then the metrics'
    /// last samples, then the readers at the end of the list, as few as will do (counted in
    /// `leftOut`).
    static func fitted(_ whole: [String: JSONValue], within limit: Int) throws -> Data {
        var bundle = whole
        let events = whole["events"]?.array ?? []
        let readers = whole["readers"]?["readers"]?.array ?? []
        let samples = whole["metrics"]?.array ?? []
        func trimmed(events kept: Int, samples keptSamples: Int, readers keptReaders: Int) -> Data {
            bundle["events"] = .array(Array(events.suffix(kept)))
            if case .object(var answer)? = whole["readers"], !readers.isEmpty {
                answer["readers"] = .array(Array(readers.prefix(keptReaders)))
                bundle["readers"] = .object(answer)
            }
            if !samples.isEmpty { bundle["metrics"] = .array(Array(samples.prefix(keptSamples))) }
            var left: [String: JSONValue] = [:]
            for (name, count) in [
                ("events", events.count - kept), ("metrics", samples.count - keptSamples),
                ("readers", readers.count - keptReaders),
            ] where count > 0 {
                left[name] = .int(Int64(count))
            }
            bundle["leftOut"] = left.isEmpty ? nil : .object(left)
            return text(bundle)
        }
        // The longest prefix count of one list that fits (the size grows with the count).
        func most(_ count: Int, _ size: (Int) -> Data) -> Data? {
            guard size(0).count <= limit else { return nil }
            var (fits, tooMany) = (0, count + 1)
            while tooMany - fits > 1 {
                let middle = (fits + tooMany) / 2
                if size(middle).count <= limit { fits = middle } else { tooMany = middle }
            }
            return size(fits)
        }
        let all = (samples: samples.count, readers: readers.count)
        if let data = most(events.count, { trimmed(events: $0, samples: all.samples, readers: all.readers) }) {
            return data
        }
        if let data = most(samples.count, { trimmed(events: 0, samples: $0, readers: all.readers) }) { return data }
        if let data = most(readers.count, { trimmed(events: 0, samples: 0, readers: $0) }) { return data }
        throw BundleError(
            "the bundle takes \(trimmed(events: 0, samples: 0, readers: 0).count) bytes without events, metrics "
                + "and readers, "
                + "more than the limit of \(limit)")
    }

    struct BundleError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    static func json(_ check: Diagnose.Check) -> JSONValue {
        var object: [String: JSONValue] = ["check": .string(check.name), "detail": .string(check.detail)]
        object["ok"] = check.ok.map { .bool($0) } ?? .null
        if let hint = check.hint { object["hint"] = .string(hint) }
        return .object(object)
    }

    /// The method's answer, or what refused it (an observer may not list credentials).
    private static func answer(_ connection: ControlConnection, _ method: ControlMethod) -> JSONValue {
        do {
            switch try connection.call(method) {
            case .success(let value): return value
            case .failure(let error): return .object(["refused": .string(error.message)])
            }
        } catch {
            return .object(["refused": .string("\(error)")])
        }
    }

    /// The newest events, oldest first, on a connection of their own.
    private static func events(socket: String, after sequence: Int64, timeout: Duration) -> [JSONValue] {
        guard let connection = try? ControlConnection(path: socket),
            let params = try? JSONValue(encoding: SubscribeParams(since: sequence)),
            case .success? = try? connection.call(.eventsSubscribe, params)
        else { return [] }
        connection.answerTimeout = timeout
        var events: [JSONValue] = []
        while events.count < eventCount, connection.waitReadable(timeout: .milliseconds(300)),
            let notification = try? connection.nextNotification()
        {
            guard notification["method"]?.string == RPCRequest.eventMethod, let params = notification["params"] else {
                continue
            }
            events.append(params)
        }
        return events
    }

    /// The file's settings (`key = value` lines under their sections), without comments; a
    /// value whose key names a secret is replaced, whatever the file holds.
    static func configuration(_ file: String) -> JSONValue {
        let data: [UInt8]
        do {
            data = try BoundedFile.read(file, limit: configurationLimit)
        } catch {
            return .object(["file": .string(file), "unreadable": .bool(true), "reason": .string("\(error)")])
        }
        var lines: [JSONValue] = []
        for raw in String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline) {
            let line = raw.trimmingWhitespace()
            if line.hasPrefix("[") {
                lines.append(.string(line))
                continue
            }
            guard !line.hasPrefix("#"), let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingWhitespace()
            lines.append(.string(isSecret(key) ? "\(key) = (not in the bundle)" : line))
        }
        return .object(["file": .string(file), "settings": .array(lines)])
    }

    /// A key that names a secret, not a path to one (`password_file` is a path).
    static func isSecret(_ key: String) -> Bool {
        let lowered = key.lowercased()
        guard !lowered.hasSuffix("_file") else { return false }
        return ["password", "secret", "token", "passphrase"].contains { lowered.contains($0) } || lowered == "pin"
            || lowered.hasSuffix("_pin") || lowered.hasSuffix("_key")
    }

    /// The kernel, the distribution, bluetoothd's version, the kernel's adapters, rfkill.
    private static func system() -> JSONValue {
        func text(_ path: String) -> String? {
            (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingWhitespace()
        }
        var system: [String: JSONValue] = [:]
        // uname, not /proc/sys: accessd's unit (ProcSubset=pid) hides the latter from the
        // bundle `diagnostics.collect` gathers.
        var names = utsname()
        uname(&names)
        let release = withUnsafeBytes(of: names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        system["kernel"] = release.isEmpty ? .null : .string(release)
        let pretty = (text("/etc/os-release") ?? "").split(separator: "\n").first { $0.hasPrefix("PRETTY_NAME=") }
        system["os"] =
            pretty.map { .string($0.dropFirst(12).trimming { $0 == "\"" }) }
            ?? .null
        system["bluetoothd"] = bluetoothdVersion().map { .string($0) } ?? .null
        system["adapters"] = .array(
            ((try? HCIAdapters.list()) ?? []).map { adapter in
                .object([
                    "name": .string(adapter.name), "address": .string("\(adapter.address)"), "up": .bool(adapter.isUp),
                ])
            })
        var rfkill: [JSONValue] = []
        for entry in ((try? FileManager.default.contentsOfDirectory(atPath: "/sys/class/rfkill")) ?? []).sorted() {
            let base = "/sys/class/rfkill/\(entry)/"
            guard text(base + "type") == "bluetooth" else { continue }
            rfkill.append(
                .object([
                    "name": .string(entry), "soft": .bool(text(base + "soft") == "1"),
                    "hard": .bool(text(base + "hard") == "1"),
                ]))
        }
        system["rfkill"] = .array(rfkill)
        return .object(system)
    }

    private static func bluetoothdVersion() -> String? {
        let path = "/usr/libexec/bluetooth/bluetoothd"
        guard FileManager.default.isExecutableFile(atPath: path) else { return nil }
        return waiting {
            // A version is short: more is not an answer to --version.
            guard
                let result = try? await run(.path(FilePath(path)), arguments: ["--version"], output: .bytes(limit: 64))
            else { return nil }
            return String(decoding: result.standardOutput, as: UTF8.self).trimmingWhitespace()
        }
    }
}
