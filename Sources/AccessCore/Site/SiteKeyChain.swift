import Crypto

/// The site keys a holder follows from the one it registered with (docs/reader-protocol.md
/// §1.2). Built once when the statements change (item sync), since following them verifies
/// signatures; asked at each exchange which keys a controller certificate may be signed by.
public struct SiteKeyChain: Sendable {
    /// A site sends at most this many statements; more are ignored (newest generations
    /// kept), so a hostile answer cannot make a holder verify without end.
    public static let maximumStatements = 16

    /// The keys in order, the registered one first, each with when it retires (nil: the
    /// newest, which does not).
    public let keys: [(key: P256.Signing.PublicKey, retirement: Double?)]

    /// Follows `statements` from `registered`: at each step, the statement of the lowest
    /// generation above the last one that the current key signed. Two statements of that
    /// generation naming different keys stop the chain there: the old key signed both, so
    /// which one the site meant cannot be told, and the holder stays with the key it has.
    public init(registered: P256.Signing.PublicKey, siteTag: SiteTag, statements: [SiteKeyTransition]) {
        let candidates = statements.filter { $0.siteTag == siteTag }
            .sorted { $0.generation > $1.generation }.prefix(Self.maximumStatements)
        var keys: [(key: P256.Signing.PublicKey, retirement: Double?)] = [(registered, nil)]
        var generation: UInt32?
        while true {
            let current = keys[keys.count - 1].key
            let signed = candidates.filter { statement in
                generation.map { statement.generation > $0 } ?? true
                    && ProtocolCrypto.verify(statement.signature, over: statement.signedContent, with: current)
            }
            guard let next = signed.min(by: { $0.generation < $1.generation }) else { break }
            let rivals = signed.filter {
                $0.generation == next.generation
                    && $0.newKey.compressedRepresentation != next.newKey.compressedRepresentation
            }
            guard rivals.isEmpty else { break }
            keys[keys.count - 1].retirement = next.retirement
            keys.append((next.newKey, nil))
            generation = next.generation
        }
        self.keys = keys
    }

    /// The keys that may sign a certificate at `time`: the newest, and each older one until
    /// its retirement (with the certificate's clock tolerance).
    public func trustedKeys(at time: Double) -> [P256.Signing.PublicKey] {
        keys.filter { entry in
            entry.retirement.map { time - Double(ControllerCertificate.clockTolerance) < $0 } ?? true
        }.map(\.key)
    }

    /// The key the site signs with now, as far as this holder knows.
    public var newest: P256.Signing.PublicKey { keys[keys.count - 1].key }
}
