/// Reads big-endian integers and byte runs from untrusted input without ever trapping:
/// every read checks the remaining length and returns nil when the input is short.
struct ByteReader {
    private let bytes: [UInt8]
    private(set) var offset: Int

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        self.offset = 0
    }

    var remaining: Int { bytes.count - offset }
    var isAtEnd: Bool { offset >= bytes.count }

    mutating func readUInt8() -> UInt8? {
        guard remaining >= 1 else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readUInt32() -> UInt32? {
        guard remaining >= 4 else { return nil }
        var value: UInt32 = 0
        for index in offset..<(offset + 4) {
            value = value << 8 | UInt32(bytes[index])
        }
        offset += 4
        return value
    }

    mutating func readBytes(_ count: Int) -> [UInt8]? {
        guard count >= 0, remaining >= count else { return nil }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }
}

/// Appends big-endian integers to a byte array.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 32) {
        bytes.reserveCapacity(capacity)
    }

    mutating func write(_ value: UInt8) { bytes.append(value) }
    mutating func write(_ value: Int8) { bytes.append(UInt8(bitPattern: value)) }
    mutating func write(_ value: UInt16) {
        bytes.append(UInt8(value >> 8))
        bytes.append(UInt8(value & 0xFF))
    }
    mutating func write(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) {
            bytes.append(UInt8((value >> UInt32(shift)) & 0xFF))
        }
    }
    mutating func write(_ run: some Sequence<UInt8>) { bytes.append(contentsOf: run) }
}

extension Array where Element == UInt8 {
    /// Lower-case hex without separators, as the protocol document's test vectors are written.
    public var hexString: String {
        func digit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 0x30 + nibble : 0x57 + nibble }
        var ascii: [UInt8] = []
        ascii.reserveCapacity(count * 2)
        for byte in self {
            ascii.append(digit(byte >> 4))
            ascii.append(digit(byte & 0x0F))
        }
        return String(decoding: ascii, as: UTF8.self)
    }

    /// Parses hex (either case, whitespace ignored); nil on any other character or an odd length.
    public init?(hexString: String) {
        var result: [UInt8] = []
        var high: UInt8?
        for scalar in hexString.unicodeScalars {
            if scalar == " " || scalar == "\n" || scalar == "\t" { continue }
            guard let nibble = UInt8(String(scalar), radix: 16) else { return nil }
            if let pending = high {
                result.append(pending << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        guard high == nil else { return nil }
        self = result
    }
}
