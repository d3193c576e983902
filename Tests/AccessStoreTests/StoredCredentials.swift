import AccessCore
import Crypto
import Foundation
import GRDB

@testable import AccessStore

extension AccessStore {
    /// Stores an active mobile credential whose id is `byte` repeated, signing with `key`.
    @discardableResult
    func insertTestCredential(byte: UInt8, key: P256.Signing.PrivateKey = P256.Signing.PrivateKey()) throws
        -> CredentialID
    {
        let id = CredentialID(bytes: Array(repeating: byte, count: 16))!
        let credential = Credential(
            id: id, siteTag: SiteTag(0x2A), cardholderName: "Ada", kind: .mobile, state: .active,
            sitePublicKey: P256.Signing.PrivateKey().publicKey, signingKey: key,
            sealedSecondFactor: nil, secondFactorEnabled: false)
        try insertCredential(
            StoredCredential(
                credential: credential, siteName: "Site", siteURL: "https://site", deviceName: "kiosk",
                registeredAt: 0))
        return id
    }

    /// A secret column's bytes as they are on disk (sealed), for searching the files.
    func storedSecret(_ sql: String, _ argument: String) throws -> [UInt8] {
        try database.read { db in [UInt8](try db.value(Data.self, sql: sql, arguments: [argument]) ?? Data()) }
    }

    /// Whether any of the database's files holds `bytes`.
    func filesHold(_ bytes: [UInt8]) -> Bool {
        [path, path + "-wal", path + "-shm"].contains { path in
            guard let contents = FileManager.default.contents(atPath: path) else { return false }
            return [UInt8](contents).firstRange(of: bytes) != nil
        }
    }
}
