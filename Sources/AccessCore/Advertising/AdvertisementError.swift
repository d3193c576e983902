/// Why an advertisement was refused. Every case has a stable `code` for logs and the socket.
public enum AdvertisementError: Error, Hashable, Sendable, CustomStringConvertible {
    case truncated(expected: Int, actual: Int)
    case oversized(limit: Int, actual: Int)
    case unsupportedVersion(UInt8)
    case unknownReaderKind(UInt8)
    case reservedFlagsSet(UInt8)
    case zeroReaderID
    case txPowerOutOfRange(Int8)
    /// `autoConnectPathLoss` must be non-zero and not above `manualConnectPathLoss`.
    case inconsistentPathLoss(autoConnect: UInt8, manualConnect: UInt8)
    /// An AD structure's length byte runs past the end of the advertising data.
    case malformedADStructure(offset: Int)
    /// The advertising data carries no service data for the reader service UUID.
    case missingServiceData
    /// The advertising data (flags included) does not fit one legacy advertising PDU.
    case exceedsLegacyPDU(length: Int)
    /// The RSSI bluetoothd reported is not one a radio measures: HCI gives -127...20 dBm, and
    /// 127 for "not available". Taken as real, 127 showed a reader as near (issue #17).
    case rssiOutOfRange(Int)
    /// A new reader while `ReaderRegistry.capacity` readers are tracked: a broadcaster
    /// rotating reader ids would otherwise grow the registry (and the journal) without bound.
    case tooManyReaders(limit: Int)

    public var code: String {
        switch self {
        case .truncated: "truncated"
        case .oversized: "oversized"
        case .unsupportedVersion: "unsupportedVersion"
        case .unknownReaderKind: "unknownReaderKind"
        case .reservedFlagsSet: "reservedFlagsSet"
        case .zeroReaderID: "zeroReaderId"
        case .txPowerOutOfRange: "txPowerOutOfRange"
        case .inconsistentPathLoss: "inconsistentPathLoss"
        case .malformedADStructure: "malformedAdStructure"
        case .missingServiceData: "missingServiceData"
        case .exceedsLegacyPDU: "exceedsLegacyPdu"
        case .rssiOutOfRange: "rssiOutOfRange"
        case .tooManyReaders: "tooManyReaders"
        }
    }

    public var description: String {
        switch self {
        case .truncated(let expected, let actual): "advertisement truncated: \(actual) bytes, need \(expected)"
        case .oversized(let limit, let actual): "advertisement oversized: \(actual) bytes, at most \(limit)"
        case .unsupportedVersion(let version): "unsupported advertisement version \(version)"
        case .unknownReaderKind(let kind): "unknown reader kind \(kind)"
        case .reservedFlagsSet(let flags): "reserved flag bits set: 0x\(String(flags, radix: 16))"
        case .zeroReaderID: "reader id 0 is not valid"
        case .txPowerOutOfRange(let power): "TX power \(power) dBm outside -100...20"
        case .inconsistentPathLoss(let auto, let manual):
            "autoConnectPathLoss \(auto) must be 1...manualConnectPathLoss (\(manual))"
        case .malformedADStructure(let offset): "malformed AD structure at offset \(offset)"
        case .missingServiceData: "no reader service data in advertising data"
        case .exceedsLegacyPDU(let length): "advertising data is \(length) bytes, a legacy PDU holds 31"
        case .rssiOutOfRange(let rssi): "RSSI \(rssi) dBm outside -127...20"
        case .tooManyReaders(let limit): "a new reader while \(limit) are tracked"
        }
    }
}
