import AccessCore
import Crypto

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
}
