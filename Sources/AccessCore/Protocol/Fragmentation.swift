/// Splits protocol messages into GATT-sized fragments and joins them again.
///
/// Fragment: `header(1) | [length(2), first fragment only] | bytes`. Header bit 7 = first
/// fragment, bit 6 = last fragment, bits 0–5 = fragment index modulo 64. A fragment holds
/// at most `MTU − 3` bytes (the ATT write/notify header takes 3).
public enum Fragmentation {
    /// Largest message either side accepts.
    public static let maximumMessageLength = 1024
    static let firstBit: UInt8 = 0x80
    static let lastBit: UInt8 = 0x40
    static let indexMask: UInt8 = 0x3F

    /// Fragments for one message at the given ATT MTU (at least 23).
    public static func fragments(of message: [UInt8], mtu: Int) -> [[UInt8]] {
        let capacity = max(mtu, ReaderGATT.minimumMTU) - 3 - 1
        var fragments: [[UInt8]] = []
        var offset = 0
        var index: UInt8 = 0
        repeat {
            var fragment: [UInt8] = [index & indexMask]
            var room = capacity
            if offset == 0 {
                fragment[0] |= firstBit
                fragment.append(UInt8(message.count >> 8))
                fragment.append(UInt8(message.count & 0xFF))
                room -= 2
            }
            let end = min(message.count, offset + room)
            fragment.append(contentsOf: message[offset..<end])
            offset = end
            if offset == message.count { fragment[0] |= lastBit }
            fragments.append(fragment)
            index = index &+ 1
        } while offset < message.count
        return fragments
    }
}

/// Joins fragments into messages, refusing anything out of order or oversized.
public struct FrameReassembler: Sendable {
    private var buffer: [UInt8] = []
    private var declaredLength = 0
    private var nextIndex: UInt8 = 0
    private var inProgress = false

    public init() {}

    /// Feeds one fragment; returns a whole message when this fragment completes one. After
    /// an error the partial message is dropped, so the next first fragment starts afresh.
    public mutating func feed(_ fragment: [UInt8]) throws(ProtocolError) -> [UInt8]? {
        do {
            return try accept(fragment)
        } catch {
            reset()
            throw error
        }
    }

    private mutating func accept(_ fragment: [UInt8]) throws(ProtocolError) -> [UInt8]? {
        guard let header = fragment.first else { throw .emptyFragment }
        let isFirst = header & Fragmentation.firstBit != 0
        let isLast = header & Fragmentation.lastBit != 0
        let index = header & Fragmentation.indexMask
        var body = fragment.dropFirst()

        if isFirst {
            // A new first fragment while another message is unfinished is a violation:
            // silently restarting would let a peer splice messages.
            guard !inProgress else { throw .fragmentOutOfOrder(expected: nextIndex, actual: index) }
            guard index == 0 else { throw .fragmentOutOfOrder(expected: 0, actual: index) }
            guard body.count >= 2 else { throw .lengthMismatch(declared: -1, actual: body.count) }
            declaredLength = Int(body[body.startIndex]) << 8 | Int(body[body.startIndex + 1])
            body = body.dropFirst(2)
            guard declaredLength <= Fragmentation.maximumMessageLength else { throw .messageTooLarge(declaredLength) }
            buffer.removeAll(keepingCapacity: true)
            inProgress = true
            nextIndex = 0
        } else {
            guard inProgress else { throw .continuationWithoutStart }
            guard index == nextIndex else { throw .fragmentOutOfOrder(expected: nextIndex, actual: index) }
        }
        buffer.append(contentsOf: body)
        nextIndex = (nextIndex &+ 1) & Fragmentation.indexMask
        guard buffer.count <= declaredLength else {
            throw .lengthMismatch(declared: declaredLength, actual: buffer.count)
        }
        guard isLast else { return nil }
        guard buffer.count == declaredLength else {
            throw .lengthMismatch(declared: declaredLength, actual: buffer.count)
        }
        let message = buffer
        reset()
        return message
    }

    public mutating func reset() {
        buffer.removeAll(keepingCapacity: true)
        inProgress = false
        nextIndex = 0
        declaredLength = 0
    }
}
