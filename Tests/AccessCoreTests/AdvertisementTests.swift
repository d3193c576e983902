import Testing

@testable import AccessCore

@Suite("Reader advertisement", .timeLimit(.minutes(5)))
struct AdvertisementTests {
    @Test func roundTripsEveryField() throws {
        let original = Fixtures.advertisement(
            id: 0xDEAD_BEEF, kind: .aperioStyle, flags: .defined, txPower: -100, auto: 1, manual: 255,
            site: SiteTag(0xFFFF_FFFF))
        let parsed = try ReaderAdvertisement(serviceData: original.serviceData)
        #expect(parsed == original)
        #expect(original.serviceData.count == ReaderAdvertisement.payloadLength)
    }

    @Test func legacyAdvertisingDataFitsOnePDU() throws {
        let data = Fixtures.advertisement().legacyAdvertisingData
        #expect(data.count <= ReaderAdvertisement.legacyAdvertisingDataLimit)
        #expect(data.count == 21)
        #expect(try ReaderAdvertisement(advertisingData: data) == Fixtures.advertisement())
    }

    @Test func findsServiceDataAmongOtherStructures() throws {
        let payload = Fixtures.advertisement().serviceData
        // Flags, a foreign service data, then ours, then zero padding.
        let data: [UInt8] =
            [0x02, 0x01, 0x06, 0x03, 0x16, 0xAA, 0xFE] + [UInt8(payload.count + 3), 0x16, 0xF8, 0xFF]
            + payload + [0x00, 0x00]
        #expect(try ReaderAdvertisement(advertisingData: data) == Fixtures.advertisement())
    }

    @Test func refusesEachKindOfBadPayload() {
        let good = Fixtures.advertisement().serviceData
        func refusal(_ bytes: [UInt8]) -> AdvertisementError? {
            do {
                _ = try ReaderAdvertisement(serviceData: bytes)
                return nil
            } catch { return error }
        }
        #expect(refusal([]) == .truncated(expected: 14, actual: 0))
        #expect(refusal(Array(good.prefix(13))) == .truncated(expected: 14, actual: 13))
        #expect(refusal(good + [0]) == .oversized(limit: 14, actual: 15))
        var bytes = good
        bytes[0] = 2
        #expect(refusal(bytes) == .unsupportedVersion(2))
        bytes = good
        bytes[1] = 9
        #expect(refusal(bytes) == .unknownReaderKind(9))
        bytes = good
        bytes[2] = 0x23
        #expect(refusal(bytes) == .reservedFlagsSet(0x23))
        bytes = good
        bytes[3...6] = [0, 0, 0, 0]
        #expect(refusal(bytes) == .zeroReaderID)
        bytes = good
        bytes[7] = 21
        #expect(refusal(bytes) == .txPowerOutOfRange(21))
        bytes = good
        bytes[8] = 90
        bytes[9] = 80
        #expect(refusal(bytes) == .inconsistentPathLoss(autoConnect: 90, manualConnect: 80))
        bytes = good
        bytes[8] = 0
        #expect(refusal(bytes) == .inconsistentPathLoss(autoConnect: 0, manualConnect: 40))
    }

    @Test func refusesBadAdvertisingData() {
        func refusal(_ bytes: [UInt8]) -> AdvertisementError? {
            do {
                _ = try ReaderAdvertisement(advertisingData: bytes)
                return nil
            } catch { return error }
        }
        #expect(refusal([UInt8](repeating: 0, count: 32)) == .exceedsLegacyPDU(length: 32))
        #expect(refusal([0x02, 0x01, 0x06]) == .missingServiceData)
        #expect(refusal([0x02, 0x01, 0x06, 0x09, 0x16]) == .malformedADStructure(offset: 3))
        #expect(refusal([0x02, 0x01]) == .malformedADStructure(offset: 0))
    }

    /// Random and mutated inputs: the parser answers with a value or a typed error, never traps.
    @Test func survivesFuzzedInput() {
        var generator = SeededGenerator(seed: 0xAD)
        let good = Fixtures.advertisement().legacyAdvertisingData
        var accepted = 0
        for round in 0..<50_000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = generator.bytes(Int.random(in: 0...40, using: &generator))
            } else {
                bytes = good
                for _ in 0..<Int.random(in: 1...3, using: &generator) {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(
                        in: 0...255, using: &generator)
                }
            }
            if (try? ReaderAdvertisement(advertisingData: bytes)) != nil { accepted += 1 }
        }
        // Some mutations hit fields that any value is valid for (site tag, id): those parse.
        #expect(accepted > 0)
        #expect(accepted < 50_000)
    }

    @Test func readerIDTextForm() {
        #expect(ReaderID(0x2A01).description == "00002A01")
        #expect(ReaderID("00002a01") == ReaderID(0x2A01))
        #expect(ReaderID("0") == nil)
        #expect(ReaderID("123456789") == nil)
        #expect(ReaderID("xyz") == nil)
        // Issue #33: a sign was taken ("+2A01" was reader 00002A01).
        #expect(ReaderID("+2A01") == nil)
        #expect(ReaderID("-1") == nil)
        #expect(ReaderID(" 2A01") == nil)
        #expect(ReaderID("ABCDEF09") == ReaderID(0xABCD_EF09))
    }

    @Test func deviceAddressTextForm() {
        #expect(DeviceAddress("00:bb:01:00:00:0a")?.description == "00:BB:01:00:00:0A")
        #expect(DeviceAddress("00:BB:01:00:00") == nil)
        #expect(DeviceAddress("00:BB:01:00:00:0G") == nil)
        #expect(DeviceAddress("000:B:01:00:00:00") == nil)
    }
}
