/// The messages of the reader protocol (docs/reader-protocol.md §5). Signatures are raw
/// P-256 ECDSA (r ‖ s, 64 bytes) over the `SignedContent` of each message.
public enum ProtocolMessage: Hashable, Sendable {
    /// Reader → credential: who the reader is, a fresh nonce, signed by the site key.
    case challenge(Challenge)
    /// Credential → reader: the credential id and the operation, signed by the credential key.
    case response(Response)
    /// Credential → Aperio-style lock: the Aperio credential's MAC over the challenge.
    case aperioResponse(AperioResponse)
    /// Reader → credential: the decision, signed by the site key.
    case decision(Decision)
    /// Reader → credential: a second factor is required; sign this nonce with the
    /// second-factor key.
    case secondFactorChallenge(SecondFactorChallenge)
    /// Credential → reader: the second-factor signature.
    case secondFactorResponse(signature: [UInt8])
    /// Reader → credential: the actions this credential may perform here.
    case actionList(ActionList)
    /// Either side: the exchange is abandoned.
    case error(ProtocolErrorCode)

    /// With a certificate, version 3's certified challenge (§1.1, type `0x08`): signed by the
    /// controller key the certificate names, not by the site key.
    public struct Challenge: Hashable, Sendable {
        public var readerID: ReaderID
        public var siteTag: SiteTag
        public var nonce: [UInt8]
        public var certificate: ControllerCertificate? = nil
        public var signature: [UInt8]
    }

    public struct Response: Hashable, Sendable {
        public var credentialID: CredentialID
        public var operation: ExchangeOperation
        public var signature: [UInt8]
    }

    public struct AperioResponse: Hashable, Sendable {
        public var aperioID: [UInt8]
        public var mac: [UInt8]
    }

    public struct Decision: Hashable, Sendable {
        public var result: AccessResult
        /// For `performAction`, the action the decision applies to.
        public var actionID: Int8?
        public var signature: [UInt8]
    }

    public struct SecondFactorChallenge: Hashable, Sendable {
        public var nonce: [UInt8]
        public var signature: [UInt8]
    }

    public struct ActionList: Hashable, Sendable {
        public var actions: [ReaderAction]
        public var signature: [UInt8]
    }

    enum TypeCode {
        static let challenge: UInt8 = 0x01
        static let response: UInt8 = 0x02
        static let decision: UInt8 = 0x03
        static let secondFactorChallenge: UInt8 = 0x04
        static let secondFactorResponse: UInt8 = 0x05
        static let actionList: UInt8 = 0x06
        static let certifiedChallenge: UInt8 = 0x08
        static let aperioResponse: UInt8 = 0x11
        static let error: UInt8 = 0x7F
    }

    static let nonceLength = 16
    static let signatureLength = 64
    static let maximumActionNameLength = 32
    static let maximumActions = 16

    public var typeCode: UInt8 {
        switch self {
        case .challenge(let challenge): challenge.certificate == nil ? TypeCode.challenge : TypeCode.certifiedChallenge
        case .response: TypeCode.response
        case .aperioResponse: TypeCode.aperioResponse
        case .decision: TypeCode.decision
        case .secondFactorChallenge: TypeCode.secondFactorChallenge
        case .secondFactorResponse: TypeCode.secondFactorResponse
        case .actionList: TypeCode.actionList
        case .error: TypeCode.error
        }
    }

    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 96)
        writer.write(typeCode)
        switch self {
        case .challenge(let challenge):
            writer.write(challenge.readerID.rawValue)
            writer.write(challenge.siteTag.rawValue)
            writer.write(challenge.nonce)
            if let certificate = challenge.certificate { writer.write(certificate.encoded) }
            writer.write(challenge.signature)
        case .response(let response):
            writer.write(response.credentialID.bytes)
            writer.write(response.operation.wireBytes)
            writer.write(response.signature)
        case .aperioResponse(let response):
            writer.write(response.aperioID)
            writer.write(response.mac)
        case .decision(let decision):
            writer.write(decision.result.decision.rawValue)
            writer.write(decision.result.mode.rawValue)
            writer.write(decision.actionID.map { UInt8(bitPattern: $0) } ?? 0x80)
            writer.write(decision.signature)
        case .secondFactorChallenge(let challenge):
            writer.write(challenge.nonce)
            writer.write(challenge.signature)
        case .secondFactorResponse(let signature):
            writer.write(signature)
        case .actionList(let list):
            writer.write(list.actionsBody)
            writer.write(list.signature)
        case .error(let code):
            writer.write(code.rawValue)
        }
        return writer.bytes
    }

    /// Decodes one whole message, refusing anything short, long or out of range.
    public init(decoding bytes: [UInt8]) throws(ProtocolError) {
        var reader = ByteReader(bytes)
        guard let type = reader.readUInt8() else { throw .truncatedMessage(type: 0) }
        func take(_ count: Int) throws(ProtocolError) -> [UInt8] {
            guard let run = reader.readBytes(count) else { throw .truncatedMessage(type: type) }
            return run
        }
        func byte() throws(ProtocolError) -> UInt8 {
            guard let value = reader.readUInt8() else { throw .truncatedMessage(type: type) }
            return value
        }
        func word() throws(ProtocolError) -> UInt32 {
            guard let value = reader.readUInt32() else { throw .truncatedMessage(type: type) }
            return value
        }

        switch type {
        case TypeCode.challenge, TypeCode.certifiedChallenge:
            let readerID = try word()
            guard readerID != 0 else { throw .invalidField("readerID") }
            let site = try word()
            let nonce = try take(Self.nonceLength)
            var certificate: ControllerCertificate?
            if type == TypeCode.certifiedChallenge {
                do {
                    certificate = try ControllerCertificate(reading: &reader)
                } catch .truncated {
                    throw .truncatedMessage(type: type)
                } catch {
                    throw .invalidField("certificate")
                }
            }
            self = .challenge(
                Challenge(
                    readerID: ReaderID(readerID), siteTag: SiteTag(site), nonce: nonce, certificate: certificate,
                    signature: try take(Self.signatureLength)))
        case TypeCode.response:
            guard let id = CredentialID(bytes: try take(16)) else { throw .invalidField("credentialID") }
            let operation = try ExchangeOperation(wireCode: try byte(), actionID: try byte())
            self = .response(
                Response(credentialID: id, operation: operation, signature: try take(Self.signatureLength)))
        case TypeCode.aperioResponse:
            self = .aperioResponse(AperioResponse(aperioID: try take(8), mac: try take(32)))
        case TypeCode.decision:
            let rawDecision = Int8(bitPattern: try byte())
            guard let decision = AccessDecision(rawValue: rawDecision) else { throw .invalidField("accessDecision") }
            guard let mode = AccessMode(rawValue: try byte()) else { throw .invalidField("accessMode") }
            let rawAction = try byte()
            let actionID: Int8? = rawAction == 0x80 ? nil : Int8(bitPattern: rawAction)
            self = .decision(
                Decision(
                    result: AccessResult(decision: decision, mode: mode), actionID: actionID,
                    signature: try take(Self.signatureLength)))
        case TypeCode.secondFactorChallenge:
            self = .secondFactorChallenge(
                SecondFactorChallenge(
                    nonce: try take(Self.nonceLength),
                    signature: try take(Self.signatureLength)))
        case TypeCode.secondFactorResponse:
            self = .secondFactorResponse(signature: try take(Self.signatureLength))
        case TypeCode.actionList:
            let count = Int(try byte())
            guard count <= Self.maximumActions else { throw .invalidField("actionCount") }
            var actions: [ReaderAction] = []
            for _ in 0..<count {
                let id = Int8(bitPattern: try byte())
                // An id names one action (§6): a list naming one twice is malformed.
                guard !actions.contains(where: { $0.id == id }) else { throw .invalidField("actionID") }
                let length = Int(try byte())
                guard length <= Self.maximumActionNameLength else { throw .invalidField("actionName") }
                let nameBytes = try take(length)
                guard let name = String(validating: nameBytes, as: UTF8.self) else { throw .invalidField("actionName") }
                actions.append(ReaderAction(id: id, name: name))
            }
            self = .actionList(ActionList(actions: actions, signature: try take(Self.signatureLength)))
        case TypeCode.error:
            guard let code = ProtocolErrorCode(rawValue: try byte()) else { throw .invalidField("errorCode") }
            self = .error(code)
        default:
            throw .unknownMessageType(type)
        }
        guard reader.isAtEnd else { throw .trailingBytes(type: type) }
    }
}

extension ProtocolMessage.ActionList {
    /// The list as encoded before the signature; also what the signature covers.
    var actionsBody: [UInt8] {
        var writer = ByteWriter()
        writer.write(UInt8(actions.count))
        for action in actions {
            writer.write(action.id)
            let name = Array(action.name.utf8.prefix(ProtocolMessage.maximumActionNameLength))
            writer.write(UInt8(name.count))
            writer.write(name)
        }
        return writer.bytes
    }
}

extension ExchangeOperation {
    /// `operation(1) | actionID(1)`: 1 access, 2 enumerate actions, 3 perform action.
    var wireBytes: [UInt8] {
        switch self {
        case .access: [1, 0]
        case .enumerateActions: [2, 0]
        case .performAction(let id): [3, UInt8(bitPattern: id)]
        }
    }

    init(wireCode: UInt8, actionID: UInt8) throws(ProtocolError) {
        switch (wireCode, actionID) {
        case (1, 0): self = .access
        case (2, 0): self = .enumerateActions
        case (3, _): self = .performAction(Int8(bitPattern: actionID))
        default: throw .invalidField("operation")
        }
    }
}
