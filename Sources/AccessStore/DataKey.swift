import Crypto
import FoundationEssentials

/// The key that seals every secret accessd keeps in its database (credential signing keys,
/// the second-factor blobs' outer layer, Aperio lock keys): AES-256-GCM, never written to the
/// state directory (docs/operations.md, "Secrets at rest").
///
/// Under systemd it arrives as the credential `accessd-data-key`, which the package sealed
/// at install with `systemd-creds encrypt` (to the TPM2 and the host key when the kiosk has a
/// TPM2, to the host key otherwise) and the unit loads with `LoadCredentialEncrypted=`.
/// Without systemd (containers, tests, a run in a terminal) it is a key file outside the state
/// directory, and accessd says that its secrets are not sealed to the machine.
public struct DataKey: Sendable {
    /// What protects the data key itself, and so what a copy of the kiosk's storage can open.
    public enum Protection: String, Sendable, Hashable {
        /// Sealed to the kiosk's TPM2 (and its host key): neither a copied state directory nor a
        /// copied disk opens the secrets.
        case tpm2
        /// Sealed to the host key (`/var/lib/systemd/credential.secret`): a copied state
        /// directory opens nothing; a copied disk does.
        case host
        /// A key file beside the state directory: a copy of the state directory alone opens
        /// nothing; a copy that includes the key file does. Not sealed to the machine.
        case keyFile
    }

    let key: SymmetricKey
    public let protection: Protection
    /// Where it was read from (a path), for status and diagnose.
    public let origin: String

    /// A data key from its 32 bytes. Production keys come from `DataKeySource`.
    public init(bytes: [UInt8], protection: Protection, origin: String) throws(DataKeyError) {
        guard bytes.count == 32 else { throw .malformed("a data key is 32 bytes, not \(bytes.count)") }
        key = SymmetricKey(data: bytes)
        self.protection = protection
        self.origin = origin
    }

    private init(key: SymmetricKey, protection: Protection, origin: String) {
        self.key = key
        self.protection = protection
        self.origin = origin
    }

    /// A new random key.
    public static func random(protection: Protection, origin: String) -> DataKey {
        DataKey(key: SymmetricKey(size: .bits256), protection: protection, origin: origin)
    }
}

/// Why there is no data key. accessd runs without one: credentials sealed earlier are then
/// `keyUnavailable`, and nothing new that needs a secret is stored.
public enum DataKeyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file is not a data key accessd wrote.
    case malformed(String)
    /// The credential or key file could not be read or created.
    case unreadable(String)
    /// The unit's fallback when `/etc/accessd/data-key.cred` could not be loaded.
    case notInstalled(String)

    public var description: String {
        switch self {
        case .malformed(let reason): "malformed data key: \(reason)"
        case .unreadable(let reason): reason
        case .notInstalled(let reason): reason
        }
    }
}
