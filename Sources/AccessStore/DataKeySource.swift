import BoundedFile
import FoundationEssentials
import Glibc

/// Where accessd's data key comes from (docs/operations.md, "Secrets at rest").
///
/// Both forms are one line of text, `accessd-data-key 1 SEAL BASE64`, where SEAL says what
/// protects it (`host+tpm2`, `host`, `file`): the package's install step writes the line into
/// `systemd-creds encrypt`, so accessd learns from the credential itself how it was sealed
/// (it cannot ask the TPM: the unit gives it no device). `accessd-data-key unavailable REASON`
/// is what the unit's fallback hands over when the sealed file could not be opened.
public enum DataKeySource {
    /// The systemd credential's name (`LoadCredentialEncrypted=accessd-data-key:...`).
    public static let credentialName = "accessd-data-key"
    static let header = "accessd-data-key"
    /// A data key line is under 100 bytes; anything longer is not one.
    static let maximumBytes = 1024

    /// The data key, from the first of:
    /// - `$CREDENTIALS_DIRECTORY/accessd-data-key`, a systemd credential;
    /// - `handoff` (`ACCESSD_DATA_KEY_HANDOFF`, set by the unit): the line the unit's root
    ///   `ExecStartPre=` opened from `/etc/accessd/data-key.cred`, in RAM; removed once read,
    ///   and never replaced by the key file (under the unit a missing key is reported, not
    ///   silently weakened);
    /// - `keyFile`, created (0600, a new random key) when it does not exist yet.
    public static func load(
        credentialsDirectory: String?, handoff: String? = nil, keyFile: String
    ) -> Result<DataKey, DataKeyError> {
        if let credentialsDirectory, !credentialsDirectory.isEmpty {
            let path = credentialsDirectory + "/" + credentialName
            if FileManager.default.fileExists(atPath: path) {
                return Result { () throws(DataKeyError) in try parse(try read(path), origin: path) }
            }
        }
        if let handoff, !handoff.isEmpty {
            return Result { () throws(DataKeyError) in
                guard FileManager.default.fileExists(atPath: handoff) else {
                    throw .notInstalled("\(handoff) is missing: the unit's ExecStartPre did not hand the data key over")
                }
                defer { unlink(handoff) }
                return try parse(try read(handoff), origin: "/etc/accessd/data-key.cred")
            }
        }
        return Result { () throws(DataKeyError) in try keyFileKey(keyFile) }
    }

    /// The line that seals `key`: what the package pipes into `systemd-creds encrypt`, and a
    /// key file's content.
    public static func line(for key: DataKey, seal: String) -> String {
        let bytes = key.key.withUnsafeBytes { Array($0) }
        return "\(header) 1 \(seal) \(Data(bytes).base64EncodedString())\n"
    }

    static func parse(_ text: String, origin: String) throws(DataKeyError) -> DataKey {
        let fields = text.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: true)
            .map { $0.trimmingWhitespace() }
        guard fields.count >= 2, fields[0] == header else {
            throw .malformed("\(origin) is not an accessd data key")
        }
        if fields[1] == "unavailable" {
            throw .notInstalled(fields.count > 2 ? fields[2...].joined(separator: " ") : "no data key")
        }
        guard fields[1] == "1", fields.count == 4 else {
            throw .malformed("\(origin): unknown data key version \(fields[1])")
        }
        let protection: DataKey.Protection
        switch fields[2] {
        case "host+tpm2", "tpm2+host", "tpm2": protection = .tpm2
        case "host": protection = .host
        case "file": protection = .keyFile
        default: throw .malformed("\(origin): unknown seal \(fields[2])")
        }
        guard let bytes = Data(base64Encoded: fields[3]) else { throw .malformed("\(origin): key is not base64") }
        return try DataKey(bytes: Array(bytes), protection: protection, origin: origin)
    }

    static func read(_ path: String) throws(DataKeyError) -> String {
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(path, limit: maximumBytes)
        } catch {
            guard case .unreadable = error else { throw .malformed("\(path) is not an accessd data key") }
            throw .unreadable("cannot read \(path)")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw .malformed("\(path) is not an accessd data key")
        }
        return text
    }

    /// The fallback without systemd: a key file that only its owner reads, created when missing.
    static func keyFileKey(_ path: String) throws(DataKeyError) -> DataKey {
        var status = stat()
        if stat(path, &status) == 0 {
            guard status.st_mode & 0o077 == 0 else {
                let mode = String(status.st_mode & 0o777, radix: 8)
                throw .unreadable("data key file \(path) is readable by others (mode \(mode)): chmod 600 it")
            }
            return try parse(try read(path), origin: path)
        }
        let key = DataKey.random(protection: .keyFile, origin: path)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw .unreadable("cannot create data key file \(path): \(String(cString: strerror(errno)))")
        }
        let bytes = Array(line(for: key, seal: "file").utf8)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written == bytes.count, synced else {
            unlink(path)
            throw .unreadable("cannot write data key file \(path)")
        }
        return key
    }
}
