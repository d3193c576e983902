import BlueZTestSupport
import Foundation

/// Debian's real `mosquitto` broker on loopback, on a port of its own, with persistence (so a
/// durable subscriber's session survives a restart) and optionally a password file.
final class MosquittoBroker: @unchecked Sendable {
    let directory: String
    let port: Int
    /// Serve TLS only, with this CA's server certificate for 127.0.0.1.
    let pki: TestPKI?
    /// A user the test's own subscribers log in as, when anonymous clients are refused.
    private let login: (String, String)?
    /// The client certificate the test's own clients present, unless told another.
    private let identity: Identity?
    private(set) var process: ChildProcess?

    typealias Identity = (certificate: String, key: String)

    /// `users`: name → password; then anonymous clients are refused.
    init(directory: String, users: [String: String] = [:], tls: Bool = false) throws {
        self.directory = directory
        pki = tls ? try TestPKI(directory: directory + "/pki") : nil
        login = users.sorted { $0.key < $1.key }.first.map { ($0.key, $0.value) }
        identity = nil
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        port = try Self.freePort()
        var config = """
            listener \(port) 127.0.0.1
            user root
            persistence true
            persistence_location \(directory)/
            log_dest file \(directory)/mosquitto.log
            log_type all
            connection_messages true

            """
        if let pki {
            config += "cafile \(pki.caCertificate)\ncertfile \(pki.serverCertificate)\nkeyfile \(pki.serverKey)\n"
        }
        if users.isEmpty {
            config += "allow_anonymous true\n"
        } else {
            let passwords = directory + "/passwords"
            _ = FileManager.default.createFile(atPath: passwords, contents: Data())
            for (name, password) in users {
                let result = try runCommand(
                    ["/usr/bin/mosquitto_passwd", "-b", passwords, name, password], mergingErrors: true)
                guard result.status == 0 else { throw TestEnvironmentError("mosquitto_passwd: \(result.output)") }
            }
            config += "allow_anonymous false\npassword_file \(passwords)\n"
        }
        try config.write(toFile: directory + "/mosquitto.conf", atomically: true, encoding: .utf8)
    }

    /// The repository's root, where the shipped examples are.
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// The site's broker as config/mosquitto-accessd.example.conf and its ACL give it, with
    /// only the port and the paths changed; the test's own clients are `operator`.
    init(siteExampleIn directory: String, repository: String = MosquittoBroker.repository) throws {
        self.directory = directory
        let pki = try TestPKI(directory: directory + "/pki")
        self.pki = pki
        login = nil
        identity = try pki.client("operator")
        port = try Self.freePort()
        let example = try String(contentsOfFile: repository + "/config/mosquitto-accessd.example.conf", encoding: .utf8)
        let acl = try String(contentsOfFile: repository + "/config/mosquitto-accessd.example.acl", encoding: .utf8)
        try acl.write(toFile: directory + "/accessd.acl", atomically: true, encoding: .utf8)
        let replacements = [
            "listener 8883": "listener \(port) 127.0.0.1",
            "/etc/mosquitto/ca_certificates/site-ca.pem": pki.caCertificate,
            "/etc/mosquitto/certs/broker.pem": pki.serverCertificate,
            "/etc/mosquitto/certs/broker.key": pki.serverKey,
            "/etc/mosquitto/accessd.acl": directory + "/accessd.acl",
        ]
        var config = example
        for (from, to) in replacements {
            guard config.contains(from) else { throw TestEnvironmentError("the example has no \(from)") }
            config = config.replacingOccurrences(of: from, with: to)
        }
        config += "user root\nlog_dest file \(directory)/mosquitto.log\nlog_type all\n"
        try config.write(toFile: directory + "/mosquitto.conf", atomically: true, encoding: .utf8)
    }

    func start() async throws {
        let process = try ChildProcess(
            ["/usr/sbin/mosquitto", "-c", directory + "/mosquitto.conf"],
            output: directory + "/mosquitto.out")
        self.process = process
        for _ in 0..<250 {
            if Self.accepts(port) { return }
            guard process.isRunning else {
                throw TestEnvironmentError(
                    "mosquitto exited: \((try? String(contentsOfFile: directory + "/mosquitto.out", encoding: .utf8)) ?? "")"
                )
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestEnvironmentError("mosquitto did not listen on \(port)")
    }

    /// SIGTERM: the broker saves its sessions and stops.
    func stop() {
        _ = process?.stop(grace: 5)
        process = nil
    }

    /// SIGKILL: the broker dies mid-link (a TLS client sees the stream end without close_notify).
    func kill() {
        process?.kill9()
        process = nil
    }

    var log: String { (try? String(contentsOfFile: directory + "/mosquitto.log", encoding: .utf8)) ?? "" }

    /// A subscriber with a durable session (`-c -i`): what it missed while away it gets on
    /// return. Prints `topic payload` per message.
    func subscribe(
        _ filter: String, id: String, output: String, format: String = "%t %p", as client: Identity? = nil
    ) throws -> ChildProcess {
        try ChildProcess(
            [
                "/usr/bin/mosquitto_sub", "-h", "127.0.0.1", "-p", "\(port)", "-q", "1", "-c", "-i", id, "-t", filter,
                "-F", format,
            ] + tlsArguments(client), output: output)
    }

    /// Publishes one message with `mosquitto_pub` (as the broker's user, over its TLS), the
    /// payload read from its standard input.
    func publish(_ topic: String, _ payload: String, as client: Identity? = nil) throws {
        let result = try runCommand(
            ["/usr/bin/mosquitto_pub", "-h", "127.0.0.1", "-p", "\(port)", "-q", "1", "-t", topic, "-s"]
                + tlsArguments(client), input: payload, mergingErrors: true, timeout: .seconds(10))
        guard result.status == 0 else { throw TestEnvironmentError("mosquitto_pub: \(result.output)") }
    }

    /// Publishes every line of `lines` as a message, as fast as the broker takes them
    /// (`mosquitto_pub -l`, QoS 0).
    func publishLines(_ topic: String, _ lines: String) throws {
        let result = try runCommand(
            ["/usr/bin/mosquitto_pub", "-h", "127.0.0.1", "-p", "\(port)", "-q", "0", "-t", topic, "-l"]
                + tlsArguments(nil), input: lines, mergingErrors: true, timeout: .seconds(120))
        guard result.status == 0 else { throw TestEnvironmentError("mosquitto_pub -l: \(result.output)") }
    }

    /// The retained message on `topic`, read by a one-shot subscriber.
    func retained(_ topic: String, as client: Identity? = nil) throws -> String {
        let result = try runCommand(
            [
                "/usr/bin/mosquitto_sub", "-h", "127.0.0.1", "-p", "\(port)", "-t", topic, "-C", "1", "-W", "3",
                "--retained-only",
            ] + tlsArguments(client), timeout: .seconds(10))
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func tlsArguments(_ client: Identity?) -> [String] {
        (pki.map { ["--cafile", $0.caCertificate] } ?? []) + (login.map { ["-u", $0.0, "-P", $0.1] } ?? [])
            + ((client ?? identity).map { ["--cert", $0.certificate, "--key", $0.key] } ?? [])
    }

    static func freePort() throws -> Int { try LoopbackPort.free() }

    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
