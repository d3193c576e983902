/// Why an exchange was abandoned by the protocol layer. Each has a stable code; the ones
/// a peer is told about travel in an `error` message with `wireCode`.
public enum ProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    // Framing
    case emptyFragment
    case fragmentOutOfOrder(expected: UInt8, actual: UInt8)
    case continuationWithoutStart
    case messageTooLarge(Int)
    case lengthMismatch(declared: Int, actual: Int)
    // Messages
    case truncatedMessage(type: UInt8)
    case trailingBytes(type: UInt8)
    case unknownMessageType(UInt8)
    case invalidField(String)
    case unexpectedMessage(UInt8)
    // Security
    case badSignature
    case wrongReader(expected: ReaderID, actual: ReaderID)
    case wrongSite
    case replayedChallenge
    /// A version 3 challenge whose controller certificate the holder refuses (§1.1).
    case certificate(CertificateRefusal)
    // Session
    case timeout
    case remoteError(ProtocolErrorCode)

    public var code: String {
        switch self {
        case .emptyFragment: "emptyFragment"
        case .fragmentOutOfOrder: "fragmentOutOfOrder"
        case .continuationWithoutStart: "continuationWithoutStart"
        case .messageTooLarge: "messageTooLarge"
        case .lengthMismatch: "lengthMismatch"
        case .truncatedMessage: "truncatedMessage"
        case .trailingBytes: "trailingBytes"
        case .unknownMessageType: "unknownMessageType"
        case .invalidField: "invalidField"
        case .unexpectedMessage: "unexpectedMessage"
        case .badSignature: "badSignature"
        case .wrongReader: "wrongReader"
        case .wrongSite: "wrongSite"
        case .replayedChallenge: "replayedChallenge"
        case .certificate(let refusal): refusal.name
        case .timeout: "timeout"
        case .remoteError: "remoteError"
        }
    }

    /// What the peer is told before the link is dropped.
    public var wireCode: ProtocolErrorCode {
        switch self {
        case .emptyFragment, .fragmentOutOfOrder, .continuationWithoutStart, .messageTooLarge, .lengthMismatch,
            .truncatedMessage, .trailingBytes, .unknownMessageType, .invalidField:
            .malformed
        case .unexpectedMessage: .unexpectedMessage
        case .badSignature, .wrongReader, .wrongSite, .certificate: .badSignature
        case .replayedChallenge: .replay
        case .timeout: .timeout
        case .remoteError(let code): code
        }
    }

    public var description: String {
        switch self {
        case .emptyFragment: "empty fragment"
        case .fragmentOutOfOrder(let expected, let actual): "fragment \(actual) out of order (expected \(expected))"
        case .continuationWithoutStart: "continuation fragment without a first fragment"
        case .messageTooLarge(let size): "message of \(size) bytes exceeds the limit"
        case .lengthMismatch(let declared, let actual): "message declared \(declared) bytes, carried \(actual)"
        case .truncatedMessage(let type): "message 0x\(String(type, radix: 16)) truncated"
        case .trailingBytes(let type): "message 0x\(String(type, radix: 16)) has trailing bytes"
        case .unknownMessageType(let type): "unknown message type 0x\(String(type, radix: 16))"
        case .invalidField(let field): "invalid field: \(field)"
        case .unexpectedMessage(let type): "message 0x\(String(type, radix: 16)) not expected now"
        case .badSignature: "signature does not verify"
        case .wrongReader(let expected, let actual): "reader \(actual) answered for \(expected)"
        case .wrongSite: "reader belongs to another site"
        case .replayedChallenge: "challenge nonce seen before"
        case .certificate(let refusal): refusal.description
        case .timeout: "peer did not answer in time"
        case .remoteError(let code): "peer reported \(code)"
        }
    }
}

/// Error codes carried in an `error` message (docs/reader-protocol.md §6).
public enum ProtocolErrorCode: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case malformed = 1
    case badSignature = 2
    case unknownCredential = 3
    case unexpectedMessage = 4
    case timeout = 5
    case replay = 6
    case secondFactorFailed = 7
    case credentialRevoked = 8
    case unsupportedOperation = 9
    case busy = 10
    /// The holder asked for a version the reader does not speak: a reader of a site that
    /// allows only version 3 (§1.1), asked for less or without a certificate naming it.
    case unsupportedVersion = 11

    public var description: String {
        switch self {
        case .malformed: "malformed"
        case .badSignature: "badSignature"
        case .unknownCredential: "unknownCredential"
        case .unexpectedMessage: "unexpectedMessage"
        case .timeout: "timeout"
        case .replay: "replay"
        case .secondFactorFailed: "secondFactorFailed"
        case .credentialRevoked: "credentialRevoked"
        case .unsupportedOperation: "unsupportedOperation"
        case .busy: "busy"
        case .unsupportedVersion: "unsupportedVersion"
        }
    }
}
