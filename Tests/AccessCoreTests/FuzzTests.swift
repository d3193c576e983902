import Testing

@testable import AccessCore

/// Every parser of outside input, fed random and mutated bytes: each answers with a value
/// or a typed error and never traps.
@Suite("Fuzzed parsers", .timeLimit(.minutes(5)))
struct FuzzTests {
    @Test func messageDecoderNeverTraps() throws {
        var generator = SeededGenerator(seed: 0xF00D)
        var harness = ExchangeHarness.standard(
            readerConfiguration: ExchangeHarness.readerConfiguration(
                actions: [ReaderAction(id: 1, name: "Arm")]))
        harness.run()
        let samples: [[UInt8]] =
            [
                ProtocolMessage.error(.timeout).encoded,
                ProtocolMessage.actionList(
                    .init(
                        actions: [ReaderAction(id: 3, name: "Mode 1")],
                        signature: [UInt8](repeating: 1, count: 64))
                ).encoded,
                ProtocolMessage.challenge(
                    .init(
                        readerID: Fixtures.readerID, siteTag: Fixtures.siteTag, nonce: ExchangeHarness.nonce,
                        certificate: try ControllerCertificateTests.issue(),
                        signature: [UInt8](repeating: 2, count: 64))
                ).encoded,
            ] + harness.transcript.map { Array($0.1.dropFirst(3)) }
        var decoded = 0
        for round in 0..<100_000 {
            var bytes: [UInt8]
            if round % 3 == 0 {
                bytes = generator.bytes(Int.random(in: 0...140, using: &generator))
                if !bytes.isEmpty {
                    bytes[0] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x08, 0x11, 0x7F].randomElement(using: &generator)!
                }
            } else {
                bytes = samples.randomElement(using: &generator)!
                let edits = Int.random(in: 1...4, using: &generator)
                for _ in 0..<edits where !bytes.isEmpty {
                    switch Int.random(in: 0..<3, using: &generator) {
                    case 0:
                        bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(
                            in: 0...255, using: &generator)
                    case 1: bytes.removeLast(Int.random(in: 0...min(8, bytes.count), using: &generator))
                    default: bytes.append(UInt8.random(in: 0...255, using: &generator))
                    }
                }
            }
            do {
                let message = try ProtocolMessage(decoding: bytes)
                decoded += 1
                // Whatever decodes re-encodes to the same bytes: no silent normalisation.
                #expect(message.encoded == bytes)
            } catch {
                _ = error.code
            }
        }
        #expect(decoded > 0)
    }

    @Test func reassemblerNeverTrapsAndBoundsMemory() {
        var generator = SeededGenerator(seed: 0xBEEF)
        var reassembler = FrameReassembler()
        var messages = 0
        for round in 0..<200_000 {
            var fragment = generator.bytes(Int.random(in: 0...30, using: &generator))
            if !fragment.isEmpty && Bool.random(using: &generator) { fragment[0] &= 0xC1 }
            if round % 10 == 0 {
                // A well-formed single-fragment message among the noise: always accepted.
                let body = generator.bytes(Int.random(in: 0...17, using: &generator))
                fragment = [0xC0, 0, UInt8(body.count)] + body
            }
            do {
                if let message = try reassembler.feed(fragment) {
                    #expect(message.count <= Fragmentation.maximumMessageLength)
                    messages += 1
                }
            } catch {
                _ = error.code
            }
        }
        #expect(messages > 0)
    }

    @Test func fragmentationRoundTripsAnyMessage() throws {
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<2_000 {
            let message = generator.bytes(Int.random(in: 0...Fragmentation.maximumMessageLength, using: &generator))
            let mtu = Int.random(in: 23...517, using: &generator)
            var reassembler = FrameReassembler()
            var result: [UInt8]?
            let fragments = Fragmentation.fragments(of: message, mtu: mtu)
            for (index, fragment) in fragments.enumerated() {
                #expect(fragment.count <= mtu - 3)
                let output = try reassembler.feed(fragment)
                #expect((output != nil) == (index == fragments.count - 1))
                result = output ?? result
            }
            #expect(result == message)
        }
    }

    /// A controller certificate (reader protocol §1.1) as a hostile reader would send it:
    /// a genuine one with bytes flipped, cut or added, and noise. Never a trap, and whatever
    /// decodes encodes back to exactly the bytes it came from (nothing is read twice or skipped).
    @Test func certificateDecoderNeverTrapsAndRoundTrips() throws {
        var generator = SeededGenerator(seed: 0xCE57)
        let genuine = try ControllerCertificate.issue(
            siteKey: Fixtures.siteKey, siteTag: Fixtures.siteTag, serial: 1, validFrom: 1_000, validUntil: 2_000,
            controllerKey: Fixtures.credentialKey.publicKey, readers: [ReaderID(1), ReaderID(2), ReaderID(3)]
        ).encoded
        var decoded = 0
        for round in 0..<20_000 {
            var bytes = genuine
            switch round % 4 {
            case 0:
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] ^= UInt8.random(
                        in: 1...255, using: &generator)
                }
            case 1: bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &generator)))
            case 2: bytes += generator.bytes(Int.random(in: 1...8, using: &generator))
            default: bytes = generator.bytes(Int.random(in: 0...260, using: &generator))
            }
            guard let certificate = try? ControllerCertificate(decoding: bytes) else { continue }
            decoded += 1
            #expect(certificate.encoded == bytes)
        }
        // Flips in the serial, times (within 7 days), reader ids and signature still decode.
        #expect(decoded > 1_000, "only \(decoded) decoded: the mutations never reached the fields")
    }

    @Test func sealedKeyDecoderNeverTraps() {
        var generator = SeededGenerator(seed: 99)
        for _ in 0..<50_000 {
            var bytes = generator.bytes(Int.random(in: 0...90, using: &generator))
            if bytes.count == 80 { bytes[0] = 1 }
            _ = try? SealedSecondFactorKey(encoded: bytes)
        }
    }
}
