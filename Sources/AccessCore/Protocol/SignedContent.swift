import Crypto

/// The exact bytes each signature or MAC covers (docs/reader-protocol.md §5). Each starts
/// with its own domain string so that a signature made for one message can never be
/// replayed as another.
public enum SignedContent {
    /// `certified`: version 3's challenge, signed by a controller key (§1.1).
    static func challenge(readerID: ReaderID, siteTag: SiteTag, nonce: [UInt8], certified: Bool = false) -> [UInt8] {
        var writer = ByteWriter(capacity: 48)
        writer.write(Array((certified ? "ACR3 challenge" : "ACR1 challenge").utf8))
        writer.write(readerID.rawValue)
        writer.write(siteTag.rawValue)
        writer.write(nonce)
        return writer.bytes
    }

    static func response(
        nonce: [UInt8], readerID: ReaderID, credentialID: CredentialID,
        operation: ExchangeOperation
    ) -> [UInt8] {
        var writer = ByteWriter(capacity: 64)
        writer.write(Array("ACR1 response".utf8))
        writer.write(nonce)
        writer.write(readerID.rawValue)
        writer.write(credentialID.bytes)
        writer.write(operation.wireBytes)
        return writer.bytes
    }

    static func decision(
        nonce: [UInt8], readerID: ReaderID, credential: [UInt8], result: AccessResult,
        actionID: Int8?
    ) -> [UInt8] {
        var writer = ByteWriter(capacity: 64)
        writer.write(Array("ACR1 decision".utf8))
        writer.write(nonce)
        writer.write(readerID.rawValue)
        writer.write(credential)
        writer.write(result.decision.rawValue)
        writer.write(result.mode.rawValue)
        writer.write(actionID.map { UInt8(bitPattern: $0) } ?? 0x80)
        return writer.bytes
    }

    static func secondFactorChallenge(
        nonce: [UInt8], secondNonce: [UInt8], readerID: ReaderID,
        credentialID: CredentialID
    ) -> [UInt8] {
        var writer = ByteWriter(capacity: 80)
        writer.write(Array("ACR1 second factor challenge".utf8))
        writer.write(nonce)
        writer.write(secondNonce)
        writer.write(readerID.rawValue)
        writer.write(credentialID.bytes)
        return writer.bytes
    }

    static func secondFactorResponse(secondNonce: [UInt8], readerID: ReaderID, credentialID: CredentialID) -> [UInt8] {
        var writer = ByteWriter(capacity: 64)
        writer.write(Array("ACR1 second factor response".utf8))
        writer.write(secondNonce)
        writer.write(readerID.rawValue)
        writer.write(credentialID.bytes)
        return writer.bytes
    }

    static func actionList(nonce: [UInt8], readerID: ReaderID, credentialID: CredentialID, body: [UInt8]) -> [UInt8] {
        var writer = ByteWriter(capacity: 64 + body.count)
        writer.write(Array("ACR1 action list".utf8))
        writer.write(nonce)
        writer.write(readerID.rawValue)
        writer.write(credentialID.bytes)
        writer.write(body)
        return writer.bytes
    }

    static func aperio(nonce: [UInt8], readerID: ReaderID, aperioID: [UInt8]) -> [UInt8] {
        var writer = ByteWriter(capacity: 48)
        writer.write(Array("ACR1 aperio".utf8))
        writer.write(nonce)
        writer.write(readerID.rawValue)
        writer.write(aperioID)
        return writer.bytes
    }
}

extension ProtocolMessage.Challenge {
    /// Whether the site key signed this challenge (§6): what a holder checks before anything
    /// else, and what `readersim conformance` reports on its own line.
    public func isSigned(by siteKey: P256.Signing.PublicKey) -> Bool {
        ProtocolCrypto.verify(
            signature,
            over: SignedContent.challenge(
                readerID: readerID, siteTag: siteTag, nonce: nonce, certified: certificate != nil),
            with: siteKey)
    }
}

/// Signing and verification with raw (r ‖ s) P-256 ECDSA over SHA-256, and HMAC-SHA256.
enum ProtocolCrypto {
    static func sign(_ content: [UInt8], with key: P256.Signing.PrivateKey) -> [UInt8] {
        // Signing fails only on a broken key object, which the types rule out; an empty
        // signature then fails verification on the other side rather than crashing here.
        (try? Array(key.signature(for: content).rawRepresentation)) ?? []
    }

    static func verify(_ signature: [UInt8], over content: [UInt8], with key: P256.Signing.PublicKey) -> Bool {
        guard let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
        return key.isValidSignature(parsed, for: content)
    }

    static func mac(_ content: [UInt8], key: SymmetricKey) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: content, using: key))
    }

    static func verifyMAC(_ mac: [UInt8], over content: [UInt8], key: SymmetricKey) -> Bool {
        HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: content, using: key)
    }
}
