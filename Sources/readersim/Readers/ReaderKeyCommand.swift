import AccessCore
import ArgumentParser
import Crypto
import Foundation
import SiteContract

/// `readersim reader-key FILE`: the reader controller's own key, made once and kept in FILE
/// (PEM, mode 0600); prints the key id and public key that the site's operator enrolls
/// (`readersim site reader add`). The private key never leaves the controller.
struct ReaderKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reader-key",
        abstract: "Create (once) and show a reader controller's key for site provisioning (docs/site-api.md §7).")

    @Argument(help: "The key file: created if absent, else read.") var file: String

    func run() throws {
        let key: P256.Signing.PrivateKey
        if FileManager.default.fileExists(atPath: file) {
            key = try Self.load(file)
        } else {
            key = P256.Signing.PrivateKey()
            let descriptor = open(file, O_WRONLY | O_CREAT | O_EXCL, 0o600)
            guard descriptor >= 0 else {
                throw ValidationError("cannot create \(file): \(String(cString: strerror(errno)))")
            }
            let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            try handle.write(contentsOf: Data((key.pemRepresentation + "\n").utf8))
        }
        SiteOutput.line([
            "file": file, "keyID": ReaderKeyID(publicKey: key.publicKey).description,
            "publicKey": SiteText.base64(key.publicKey),
        ])
    }

    static func load(_ path: String) throws -> P256.Signing.PrivateKey {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
        else {
            throw ValidationError("cannot read the reader key \(path): \(String(cString: strerror(errno)))")
        }
        do {
            return try P256.Signing.PrivateKey(pemRepresentation: text)
        } catch {
            throw ValidationError("\(path) is not a PEM P-256 private key (readersim reader-key makes one)")
        }
    }
}
