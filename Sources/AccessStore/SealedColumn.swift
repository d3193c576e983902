import Crypto
import FoundationEssentials

/// One secret as the database holds it: `version(1)=1 | nonce(12) | ciphertext | tag(16)`,
/// AES-256-GCM under the data key with the secret's place (table, column, row) as associated
/// data, so a sealed value copied into another row or column does not open.
enum SealedColumn {
    static let version: UInt8 = 1

    static func seal(_ plaintext: some DataProtocol, key: DataKey, place: String) throws -> Data {
        let box = try AES.GCM.seal(plaintext, using: key.key, authenticating: Data(place.utf8))
        // Nil only for a nonce that is not 12 bytes; this one is generated.
        guard let combined = box.combined else { throw CryptoKitError.incorrectParameterSize }
        var sealed = Data([version])
        sealed.append(combined)
        return sealed
    }

    /// The plaintext, or nil when the value does not open with this key at this place: another
    /// machine's data key, a value moved between rows, or a corrupt row (GCM cannot tell which).
    static func open(_ sealed: Data, key: DataKey, place: String) -> Data? {
        guard sealed.count > 1 + 12 + 16, sealed.first == version,
            let box = try? AES.GCM.SealedBox(combined: sealed.dropFirst())
        else { return nil }
        return try? AES.GCM.open(box, using: key.key, authenticating: Data(place.utf8))
    }

    // The places: each secret's associated data.
    static func signingKey(_ credential: String) -> String { "credential.signingKey/\(credential)" }
    static func secondFactor(_ credential: String) -> String { "credential.sealedSecondFactor/\(credential)" }
    static func aperioKey(_ credential: String, _ item: String) -> String { "item.aperioKey/\(credential)/\(item)" }
    /// A known value sealed when the database was first sealed: whether the data key now in
    /// hand is the one the database's secrets were sealed with.
    static let keyCheck = "setting.keyCheck"
    static let keyCheckValue = Data("accessd data key check".utf8)
}
