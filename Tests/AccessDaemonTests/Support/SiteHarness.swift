import AccessCore
import AccessJSON
import BlueZTestSupport
import ControlSocket
import Foundation

/// A real `readersim site serve` on loopback, with its database in `directory`, and the
/// `readersim site …` commands a site administrator would run.
final class SiteHarness: @unchecked Sendable {
    let directory: String
    var database: String { directory + "/site.sqlite" }
    private(set) var server: ChildProcess?
    private(set) var url = ""
    private var outputPath: String { directory + "/site.out" }

    static var readersimPath: String {
        URL(fileURLWithPath: DaemonHarness.accessdPath).deletingLastPathComponent().appendingPathComponent("readersim")
            .path
    }

    init(directory: String, name: String = "Test site", tag: String = "5117e001") throws {
        self.directory = directory
        _ = try run(["init", "--name", name, "--tag", tag])
    }

    /// The site whose database is already in `directory` (a copy of one `init` made).
    init(existingIn directory: String) {
        self.directory = directory
    }

    /// Starts the server on the port it had before (the URL accessd holds stays valid).
    func serveOn(port: String, fault: String?) async throws {
        try await serve(fault: fault, listen: "127.0.0.1:\(port)")
    }

    /// Starts the server (optionally misbehaving) and waits for its `listening` line.
    func serve(fault: String? = nil, listen: String = "127.0.0.1:0", extra: [String] = []) async throws {
        try? FileManager.default.removeItem(atPath: outputPath)
        var arguments = [Self.readersimPath, "site", "serve", "--db", database, "--listen", listen] + extra
        if let fault { arguments += ["--fault", fault] }
        let process = try ChildProcess(arguments, output: outputPath)
        server = process
        // Up to 30 s: a debug readersim starts in well under a second on a host, but took
        // over 10 s inside the lab VM (TCG) on a loaded CI machine.
        for _ in 0..<1500 {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first, let object = try? JSONValue.parse(String(line)),
                let listening = object["url"]?.string
            {
                url = listening
                return
            }
            guard process.isRunning else { throw TestEnvironmentError("readersim site serve exited: \(text)") }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestEnvironmentError("readersim site serve did not start in 30 s")
    }

    /// The requests the server logged (`{"event":"request","method","path","status"}`).
    var requests: [JSONValue] {
        ((try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "").split(separator: "\n")
            .compactMap { try? JSONValue.parse(String($0)) }.filter { $0["event"] == "request" }
    }

    func stop() {
        server?.stop()
        server = nil
    }

    /// SIGKILL: the site's machine lost, mid-answer perhaps.
    func kill() {
        server?.kill9()
        server = nil
    }

    /// The port it listens on (to serve again where accessd's credentials point).
    var port: String { url.split(separator: ":").last.map { String($0.prefix { $0.isNumber }) } ?? "0" }

    var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    /// Runs `readersim site ARGS --db DB` and returns its standard output.
    @discardableResult
    func run(_ arguments: [String]) throws -> String {
        let (command, rest) = (arguments[0], Array(arguments.dropFirst()))
        let result = try runCommand(
            [Self.readersimPath, "site"]
                + (["item", "reader"].contains(command)
                    ? [command, rest[0], "--db", database] + rest.dropFirst() : [command, "--db", database] + rest))
        guard result.status == 0 else {
            throw TestEnvironmentError("readersim site \(arguments.joined(separator: " ")) failed: \(result.errors)")
        }
        return result.output
    }

    /// A fresh invitation's URL and code. `byName` puts `localhost` for the address in the
    /// site URL the invitation carries, so that the holder resolves a host name.
    func invite(
        _ name: String, secondFactor: Bool = false, expiresIn: Double? = nil,
        byName: Bool = false
    ) throws -> (url: String, code: String) {
        let siteURL = url.isEmpty ? "http://127.0.0.1:1" : url
        var arguments = [
            "invite", "--name", name, "--json", "--url",
            byName ? siteURL.replacingOccurrences(of: "://127.0.0.1:", with: "://localhost:") : siteURL,
        ]
        if secondFactor { arguments.append("--second-factor") }
        if let expiresIn { arguments.append("--expires-in=\(expiresIn)") }
        let object = try JSONValue.parse(try run(arguments).trimmingCharacters(in: .whitespacesAndNewlines))
        guard let url = object["url"]?.string, let code = object["code"]?.string else {
            throw TestEnvironmentError("readersim site invite printed no code")
        }
        return (url, code)
    }
}

extension DaemonHarness {
    struct Secret {
        var hex: String
        var base64: String
    }

    /// Key material as stored: credential keys and Aperio keys, in the forms they could leak in.
    func secretsInStore() throws -> [Secret] {
        let database = stateDirectory + "/accessd.sqlite"
        let output = try sqlite(
            database,
            "SELECT hex(signingKey) FROM credential UNION ALL SELECT hex(aperioKey) FROM item WHERE aperioKey IS NOT NULL"
        )
        return output.split(separator: "\n").compactMap { line in
            guard let bytes = [UInt8](hexString: String(line)), !bytes.isEmpty else { return nil }
            return Secret(
                hex: bytes.map { String(format: "%02x", $0) }.joined(), base64: Data(bytes).base64EncodedString())
        }
    }

    /// Every journalled event, as text.
    func journalText() throws -> String {
        try sqlite(stateDirectory + "/accessd.sqlite", "SELECT kind || ' ' || data FROM event")
    }

    func mode(of path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? Int) ?? -1
    }

    private func sqlite(_ database: String, _ query: String) throws -> String {
        try runCommand([
            "/usr/bin/python3", "-c",
            "import sqlite3,sys\nfor r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]): print(r[0])",
            database, query,
        ]).output
    }
}
