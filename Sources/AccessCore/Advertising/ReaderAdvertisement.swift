/// What a reader says about itself in every advertisement: the service data payload of
/// docs/reader-protocol.md §2, keyed by the 16-bit UUID `ReaderAdvertisement.serviceDataUUID`.
///
/// Layout (version 1, 14 bytes, multi-byte fields big-endian):
/// `version | kind | flags | readerID(4) | txPower | autoConnectPathLoss | manualConnectPathLoss | siteTag(4)`
public struct ReaderAdvertisement: Hashable, Sendable {
    /// The 16-bit service UUID the payload is keyed by in the advertising data.
    public static let serviceDataUUID: UInt16 = 0xFFF8
    /// The same UUID in the 128-bit form BlueZ uses as the key of `ServiceData`.
    public static let serviceDataUUIDString = "0000fff8-0000-1000-8000-00805f9b34fb"
    /// Payload length in protocol version 1.
    public static let payloadLength = 14
    /// A legacy advertising PDU carries at most 31 bytes of advertising data.
    public static let legacyAdvertisingDataLimit = 31

    public var version: UInt8
    public var kind: ReaderKind
    public var flags: ReaderFlags
    public var readerID: ReaderID
    /// Transmit power measured at 1 m, in dBm.
    public var txPower: Int8
    /// Path loss (dB) below which the reader is in auto-connect range.
    public var autoConnectPathLoss: UInt8
    /// Path loss (dB) above which the reader is out of manual range and expires.
    public var manualConnectPathLoss: UInt8
    public var siteTag: SiteTag

    public init(
        kind: ReaderKind,
        flags: ReaderFlags,
        readerID: ReaderID,
        txPower: Int8,
        autoConnectPathLoss: UInt8,
        manualConnectPathLoss: UInt8,
        siteTag: SiteTag
    ) {
        self.version = AccessCoreVersion.readerProtocolVersion
        self.kind = kind
        self.flags = flags
        self.readerID = readerID
        self.txPower = txPower
        self.autoConnectPathLoss = autoConnectPathLoss
        self.manualConnectPathLoss = manualConnectPathLoss
        self.siteTag = siteTag
    }

    /// Parses the service data payload (the bytes after the UUID).
    public init(serviceData bytes: [UInt8]) throws(AdvertisementError) {
        guard !bytes.isEmpty else { throw .truncated(expected: Self.payloadLength, actual: 0) }
        // The version is checked first so that a future, longer payload is reported as
        // an unsupported version rather than as oversized.
        guard bytes[0] == AccessCoreVersion.readerProtocolVersion else { throw .unsupportedVersion(bytes[0]) }
        guard bytes.count >= Self.payloadLength else {
            throw .truncated(expected: Self.payloadLength, actual: bytes.count)
        }
        guard bytes.count == Self.payloadLength else {
            throw .oversized(limit: Self.payloadLength, actual: bytes.count)
        }

        guard let kind = ReaderKind(rawValue: bytes[1]) else { throw .unknownReaderKind(bytes[1]) }
        let flags = ReaderFlags(rawValue: bytes[2])
        guard flags.isSubset(of: .defined) else { throw .reservedFlagsSet(bytes[2]) }
        let id = UInt32(bytes[3]) << 24 | UInt32(bytes[4]) << 16 | UInt32(bytes[5]) << 8 | UInt32(bytes[6])
        guard id != 0 else { throw .zeroReaderID }
        let txPower = Int8(bitPattern: bytes[7])
        guard (-100...20).contains(txPower) else { throw .txPowerOutOfRange(txPower) }
        let auto = bytes[8]
        let manual = bytes[9]
        guard auto > 0, auto <= manual else { throw .inconsistentPathLoss(autoConnect: auto, manualConnect: manual) }
        let site = UInt32(bytes[10]) << 24 | UInt32(bytes[11]) << 16 | UInt32(bytes[12]) << 8 | UInt32(bytes[13])

        self.version = bytes[0]
        self.kind = kind
        self.flags = flags
        self.readerID = ReaderID(id)
        self.txPower = txPower
        self.autoConnectPathLoss = auto
        self.manualConnectPathLoss = manual
        self.siteTag = SiteTag(site)
    }

    /// The service data payload, as a reader puts it under `serviceDataUUID`.
    public var serviceData: [UInt8] {
        var writer = ByteWriter(capacity: Self.payloadLength)
        writer.write(version)
        writer.write(kind.rawValue)
        writer.write(flags.rawValue)
        writer.write(readerID.rawValue)
        writer.write(txPower)
        writer.write(autoConnectPathLoss)
        writer.write(manualConnectPathLoss)
        writer.write(siteTag.rawValue)
        return writer.bytes
    }

    /// The whole legacy advertising data: a Flags AD structure (LE General Discoverable,
    /// BR/EDR not supported) and the Service Data AD structure. Always 21 bytes, within
    /// the 31-byte legacy limit; the reader's name and 128-bit service UUID go in the scan
    /// response.
    public var legacyAdvertisingData: [UInt8] {
        let payload = serviceData
        var writer = ByteWriter(capacity: Self.legacyAdvertisingDataLimit)
        writer.write([0x02, ADType.flags, 0x06] as [UInt8])
        writer.write(UInt8(payload.count + 3))
        writer.write(ADType.serviceData16)
        writer.write(UInt8(Self.serviceDataUUID & 0xFF))  // AD UUIDs are little-endian
        writer.write(UInt8(Self.serviceDataUUID >> 8))
        writer.write(payload)
        return writer.bytes
    }

    /// Finds and parses the reader service data in raw advertising data (AD structures),
    /// refusing data that does not fit a legacy PDU or whose structures are malformed.
    public init(advertisingData bytes: [UInt8]) throws(AdvertisementError) {
        guard bytes.count <= Self.legacyAdvertisingDataLimit else { throw .exceedsLegacyPDU(length: bytes.count) }
        var offset = 0
        var found: [UInt8]?
        while offset < bytes.count {
            let length = Int(bytes[offset])
            if length == 0 { break }  // the rest is padding (Core Spec Vol 3 Part C §11)
            guard offset + length < bytes.count else { throw .malformedADStructure(offset: offset) }
            let type = bytes[offset + 1]
            if type == ADType.serviceData16, length >= 3 {
                let uuid = UInt16(bytes[offset + 2]) | UInt16(bytes[offset + 3]) << 8
                if uuid == Self.serviceDataUUID, found == nil {
                    found = Array(bytes[(offset + 4)..<(offset + 1 + length)])
                }
            }
            offset += 1 + length
        }
        guard let payload = found else { throw .missingServiceData }
        try self.init(serviceData: payload)
    }
}

/// Advertising data types used here (Bluetooth Assigned Numbers §2.3).
enum ADType {
    static let flags: UInt8 = 0x01
    static let serviceData16: UInt8 = 0x16
}
