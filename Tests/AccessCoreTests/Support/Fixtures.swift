import Crypto

@testable import AccessCore

/// Fixed keys and ids shared by the tests and the documented test vectors.
enum Fixtures {
    static let siteTag = SiteTag(0x5117_E001)
    static let readerID = ReaderID(0x0000_2A01)
    static let credentialID = CredentialID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")!

    static let siteKey = privateKey("c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721")
    static let credentialKey = privateKey("519b423d715f8b581f4fa8ee59f4771a5b44c8130b4e3eacca54a56dda72b464")
    static let secondFactorKey = privateKey("a8ea150cb80125d7381c4c1f1da8e9de2711f9917060406a73d7904519e51388")
    static let spoofKey = privateKey("0f56db78ca460b055c500064824bed999a25aaf48ebb519ac201537b85479813")

    static let aperio = AperioSecret(
        identifier: [0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7],
        key: (0..<32).map { UInt8($0) })!

    static func privateKey(_ hex: String) -> P256.Signing.PrivateKey {
        // Fixed, valid scalars: a failure here is a broken fixture, not a test result.
        try! P256.Signing.PrivateKey(rawRepresentation: [UInt8](hexString: hex)!)
    }

    static func advertisement(
        id: UInt32 = 0x2A01, kind: ReaderKind = .gallagherStyle,
        flags: ReaderFlags = [.autoConnectEnabled, .manualConnectEnabled], txPower: Int8 = -59,
        auto: UInt8 = 20, manual: UInt8 = 40, site: SiteTag = siteTag
    ) -> ReaderAdvertisement {
        ReaderAdvertisement(
            kind: kind, flags: flags, readerID: ReaderID(id), txPower: txPower,
            autoConnectPathLoss: auto, manualConnectPathLoss: manual, siteTag: site)
    }

    static let address = DeviceAddress("00:BB:01:00:00:00")!
}
