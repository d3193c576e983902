import Crypto
import CryptoExtras

/// The second-factor private key sealed at rest under a key derived from the PIN.
///
/// scrypt (memory-hard: a stolen state directory cannot be brute-forced on a GPU cheaply)
/// derives a 256-bit key from the PIN and a random salt; AES-256-GCM seals the 32-byte P-256
/// private scalar with the credential id as associated data, so a sealed key cannot be moved
/// to another credential. A wrong PIN fails the GCM tag check after the full KDF has run,
/// so its timing is that of a right PIN. See docs/reader-protocol.md §7.
///
/// Encoding (80 bytes): `version(1)=1 | log2N(1) | r(1) | p(1) | salt(16) | nonce(12) | ciphertext(32) | tag(16)`.
public struct SealedSecondFactorKey: Hashable, Sendable {
    public struct Parameters: Hashable, Sendable {
        public var log2N: UInt8
        public var r: UInt8
        public var p: UInt8

        public init(log2N: UInt8, r: UInt8, p: UInt8) {
            self.log2N = log2N
            self.r = r
            self.p = p
        }

        /// N = 2^15, r = 8, p = 1: 32 MiB and about 0.1 s per attempt on this class of machine.
        public static let standard = Parameters(log2N: 15, r: 8, p: 1)

        var memoryBytes: Int { 128 * Int(r) * (1 << Int(log2N)) * Int(p) + 1024 * 1024 }
        var isAcceptable: Bool { (10...20).contains(log2N) && (1...16).contains(r) && (1...4).contains(p) }
    }

    public static let encodedLength = 80
    static let version: UInt8 = 1

    public let parameters: Parameters
    public let salt: [UInt8]
    public let nonce: [UInt8]
    public let ciphertext: [UInt8]
    public let tag: [UInt8]

    /// Seals `key` under `pin`. Salt and nonce come from `generator` (the system CSPRNG in
    /// production, a seeded one in tests).
    public static func seal(
        _ key: P256.Signing.PrivateKey, pin: String, credential: CredentialID,
        parameters: Parameters = .standard, using generator: inout some RandomNumberGenerator
    ) throws(SecondFactorError) -> SealedSecondFactorKey {
        try PIN.validate(pin)
        let salt = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let nonce = (0..<12).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return try seal(key, pin: pin, credential: credential, parameters: parameters, salt: salt, nonce: nonce)
    }

    /// Deterministic sealing for test vectors.
    public static func seal(
        _ key: P256.Signing.PrivateKey, pin: String, credential: CredentialID, parameters: Parameters,
        salt: [UInt8], nonce: [UInt8]
    ) throws(SecondFactorError) -> SealedSecondFactorKey {
        try PIN.validate(pin)
        guard parameters.isAcceptable, salt.count == 16, nonce.count == 12 else { throw .malformedSealedKey }
        let derived = try derive(pin: pin, salt: salt, parameters: parameters)
        do {
            let box = try AES.GCM.seal(
                Array(key.rawRepresentation), using: derived,
                nonce: AES.GCM.Nonce(data: nonce), authenticating: credential.bytes)
            return SealedSecondFactorKey(
                parameters: parameters, salt: salt, nonce: nonce,
                ciphertext: Array(box.ciphertext), tag: Array(box.tag))
        } catch {
            throw .cryptoFailure
        }
    }

    /// Opens the sealed key with `pin`. Prefer `SecondFactorGuard.unseal`, which counts attempts.
    public func unseal(pin: String, credential: CredentialID) throws(SecondFactorError) -> P256.Signing.PrivateKey {
        try PIN.validate(pin)
        let derived = try Self.derive(pin: pin, salt: salt, parameters: parameters)
        let opened: [UInt8]
        do {
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonce), ciphertext: ciphertext, tag: tag)
            opened = Array(try AES.GCM.open(box, using: derived, authenticating: credential.bytes))
        } catch {
            throw .wrongPIN
        }
        do {
            return try P256.Signing.PrivateKey(rawRepresentation: opened)
        } catch {
            throw .malformedSealedKey
        }
    }

    private static func derive(pin: String, salt: [UInt8], parameters: Parameters) throws(SecondFactorError)
        -> SymmetricKey
    {
        do {
            return try KDF.Scrypt.deriveKey(
                from: Array(pin.utf8), salt: salt, outputByteCount: 32, rounds: 1 << Int(parameters.log2N),
                blockSize: Int(parameters.r), parallelism: Int(parameters.p), maxMemory: parameters.memoryBytes)
        } catch {
            throw .cryptoFailure
        }
    }

    public var encoded: [UInt8] {
        [Self.version, parameters.log2N, parameters.r, parameters.p] + salt + nonce + ciphertext + tag
    }

    public init(encoded bytes: [UInt8]) throws(SecondFactorError) {
        guard bytes.count == Self.encodedLength, bytes[0] == Self.version else { throw .malformedSealedKey }
        let parameters = Parameters(log2N: bytes[1], r: bytes[2], p: bytes[3])
        guard parameters.isAcceptable else { throw .malformedSealedKey }
        self.parameters = parameters
        self.salt = Array(bytes[4..<20])
        self.nonce = Array(bytes[20..<32])
        self.ciphertext = Array(bytes[32..<64])
        self.tag = Array(bytes[64..<80])
    }

    private init(parameters: Parameters, salt: [UInt8], nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8]) {
        self.parameters = parameters
        self.salt = salt
        self.nonce = nonce
        self.ciphertext = ciphertext
        self.tag = tag
    }
}

/// Why a second factor could not be used. Codes are stable on the socket.
public enum SecondFactorError: String, Error, Sendable, CaseIterable {
    /// The PIN is not 4–12 ASCII digits.
    case invalidPINFormat
    case wrongPIN
    case lockedOut
    case malformedSealedKey
    case cryptoFailure
}

/// PIN rules, checked before any key derivation.
public enum PIN {
    public static let allowedLengths = 4...12

    public static func validate(_ pin: String) throws(SecondFactorError) {
        let bytes = Array(pin.utf8)
        guard allowedLengths.contains(bytes.count), bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw .invalidPINFormat
        }
    }
}

/// Counts wrong PINs for one credential and locks the second factor after `maximumAttempts`.
/// A value the store persists, so a restart does not reset the count.
///
/// An attempt is charged before the key derivation and refunded only when the PIN proves
/// right, so attempts evaluated at the same time can never exceed the attempts left: the
/// caller persists the charge (`charge()`), runs the slow KDF anywhere, then applies the
/// result (`succeeded()` or nothing). `unseal` does all three in one place.
public struct SecondFactorGuard: Hashable, Sendable {
    public var maximumAttempts: Int
    public private(set) var failedAttempts: Int

    public init(maximumAttempts: Int = 5, failedAttempts: Int = 0) {
        self.maximumAttempts = maximumAttempts
        self.failedAttempts = failedAttempts
    }

    public var isLockedOut: Bool { failedAttempts >= maximumAttempts }
    public var attemptsLeft: Int { max(0, maximumAttempts - failedAttempts) }

    /// Takes one attempt, or refuses when none is left. The PIN's format is checked first:
    /// a malformed PIN costs no attempt.
    public mutating func charge(pin: String) throws(SecondFactorError) {
        try PIN.validate(pin)
        guard !isLockedOut else { throw .lockedOut }
        failedAttempts += 1
    }

    /// The charged PIN was right: the count starts again.
    public mutating func succeeded() { failedAttempts = 0 }

    /// Charges, unseals and applies the result. A wrong PIN that used the last attempt
    /// throws `.lockedOut`.
    public mutating func unseal(
        _ sealed: SealedSecondFactorKey, pin: String, credential: CredentialID
    ) throws(SecondFactorError) -> P256.Signing.PrivateKey {
        try charge(pin: pin)
        do {
            let key = try sealed.unseal(pin: pin, credential: credential)
            succeeded()
            return key
        } catch .wrongPIN {
            throw isLockedOut ? .lockedOut : .wrongPIN
        }
    }

    /// An administrator reset (a new PIN was set).
    public mutating func reset() { failedAttempts = 0 }
}
