import Testing

@testable import AccessCore

@Suite("Reader registry", .timeLimit(.minutes(5)))
struct RegistryTests {
    var registry = ReaderRegistry()
    var clock = VirtualClock()

    mutating func observe(
        _ advertisement: ReaderAdvertisement = Fixtures.advertisement(), rssi: Int = -79,
        name: String? = nil
    ) -> ReaderRegistry.Observation {
        defer { clock.advance(.milliseconds(100)) }
        return registry.observe(advertisement, rssi: rssi, address: Fixtures.address, name: name, at: clock.now)
    }

    @Test mutating func firstAdvertisementPublishesTheReader() throws {
        let observation = observe(name: "Front door")
        let attributes = try #require(observation.update)
        #expect(attributes.id == Fixtures.readerID)
        #expect(attributes.name == "Front door")
        #expect(attributes.measuredPathLoss == 20)
        #expect(attributes.isBleAutoConnectEnabled && attributes.isBleManualConnectEnabled)
        #expect(!attributes.isSecondFactorRequired && !attributes.isBleActionsEnabled)
        #expect(registry.count == 1)
    }

    /// The auto-connect selection window waits only when another reader could be nearer.
    @Test mutating func anotherReaderIsHeardOnlyWhileItIsAvailable() {
        _ = observe()
        #expect(!registry.isAnotherReaderHeard(besides: Fixtures.readerID))
        _ = observe(Fixtures.advertisement(id: 0x2A02), rssi: -95)
        #expect(registry.isAnotherReaderHeard(besides: Fixtures.readerID))
        #expect(registry.isAnotherReaderHeard(besides: ReaderID(0x2A02)))
        clock.advance(.seconds(11))
        _ = registry.expire(at: clock.now)
        #expect(!registry.isAnotherReaderHeard(besides: Fixtures.readerID))
    }

    /// A connected reader's presence advertisements (non-connectable, another address)
    /// move its path loss but neither its address nor its advertised flags.
    @Test mutating func presenceAdvertisementsMovePathLossOnly() {
        _ = observe(rssi: -89)
        let presence = Fixtures.advertisement(flags: [.autoConnectEnabled, .manualConnectEnabled, .presence])
        var observation = registry.observe(
            presence, rssi: -65, address: DeviceAddress("06:13:C5:5D:36:B4")!, name: nil,
            at: clock.now)
        for _ in 0..<10 {
            clock.advance(.milliseconds(100))
            observation = registry.observe(
                presence, rssi: -65, address: DeviceAddress("06:13:C5:5D:36:B4")!, name: nil,
                at: clock.now)
        }
        #expect(observation.isInAutoConnectRange)
        let reader = registry.reader(Fixtures.readerID)
        #expect(reader?.address == Fixtures.address)
        #expect(reader?.flags == [.autoConnectEnabled, .manualConnectEnabled])
    }

    /// The count the status and metrics take agrees with the readers listed, as readers
    /// enter auto range and expire.
    @Test mutating func readersInAutoRangeAreCountedAsListed() {
        #expect(registry.countInAutoConnectRange == 0)
        for _ in 0..<10 { _ = observe(rssi: -65) }
        _ = observe(Fixtures.advertisement(id: 0x2A02), rssi: -95)
        #expect(registry.countInAutoConnectRange == 1)
        #expect(registry.countInAutoConnectRange == registry.readers.filter(\.isInAutoConnectRange).count)
        clock.advance(.seconds(11))
        _ = registry.expire(at: clock.now)
        #expect(registry.countInAutoConnectRange == 0)
        #expect(registry.readers.isEmpty)
    }

    @Test mutating func steadyRSSIPublishesNothingMore() {
        _ = observe()
        for _ in 0..<50 { #expect(observe().update == nil) }
    }

    @Test mutating func nameArrivingLaterIsPublished() {
        _ = observe()
        #expect(observe(name: nil).update == nil)
        #expect(observe(name: "Lobby").update?.name == "Lobby")
        #expect(observe(name: nil).update == nil)
        #expect(registry.reader(Fixtures.readerID)?.name == "Lobby")
    }

    @Test mutating func changedAdvertisedAttributesArePublished() {
        _ = observe()
        let changed = Fixtures.advertisement(flags: [.manualConnectEnabled, .actionsEnabled])
        #expect(observe(changed).update?.isBleActionsEnabled == true)
    }

    @Test mutating func pathLossDriftIsRateLimited() {
        _ = observe(rssi: -99)  // 40 dB: far
        var updates = 0
        // Creep nearer by 1 dB a report, 10 reports a second: at most one drift report a second.
        for step in 0..<10 {
            if observe(rssi: -99 + step).update != nil { updates += 1 }
        }
        #expect(updates <= 2)
    }

    @Test mutating func aLinkedReaderIsNotStale() {
        _ = observe()
        // Connected for 30 s (a PIN being typed): silent, yet still there.
        for _ in 0..<30 {
            clock.advance(.seconds(1))
            #expect(registry.expire(at: clock.now, linked: [Fixtures.readerID]).isEmpty)
        }
        #expect(registry.reader(Fixtures.readerID) != nil)
        // The link is gone: the stale clock runs from its end.
        clock.advance(.seconds(9))
        #expect(registry.expire(at: clock.now).isEmpty)
        clock.advance(.seconds(2))
        #expect(registry.expire(at: clock.now) == [Fixtures.readerID])
    }

    @Test mutating func staleReadersBecomeUnavailable() {
        _ = observe()
        clock.advance(.seconds(9))
        #expect(registry.expire(at: clock.now).isEmpty)
        clock.advance(.seconds(2))
        #expect(registry.expire(at: clock.now) == [Fixtures.readerID])
        #expect(registry.count == 0)
        #expect(registry.reader(Fixtures.readerID) == nil)
        // Heard again: a new reader, published again.
        #expect(observe().update != nil)
    }

    @Test mutating func beyondManualRangeExpiresAfterTheDelay() {
        _ = observe()
        var became: Bool = false
        var reports = 0
        while !became && reports < 100 {
            became = observe(rssi: -59 - 55).becameUnavailable
            reports += 1
        }
        #expect(became)
        // 5 s of reports beyond manual range at 10 a second, plus the time to get there.
        #expect(reports >= 50 && reports <= 62)
        #expect(registry.count == 0)
        // Still far: stays unavailable, and says nothing.
        #expect(observe(rssi: -59 - 55).update == nil)
        // Near again: back, with fresh samples (path loss of this report alone).
        let back = observe(rssi: -59 - 10)
        #expect(back.update?.measuredPathLoss == 10)
        #expect(registry.count == 1)
    }

    @Test mutating func removeAllReportsAvailableReaders() {
        _ = observe()
        _ = observe(Fixtures.advertisement(id: 7))
        #expect(registry.removeAll() == [ReaderID(7), Fixtures.readerID])
        #expect(registry.count == 0)
    }

    @Test mutating func manyReadersStayIndexedThroughRemovals() {
        func heard(_ id: Int, at time: Timestamp) {
            _ = registry.observe(
                Fixtures.advertisement(id: UInt32(id)), rssi: -79, address: Fixtures.address,
                name: nil, at: time)
        }
        for id in 1...100 { heard(id, at: .seconds(0)) }
        for id in stride(from: 2, through: 100, by: 2) { heard(id, at: .seconds(5)) }
        clock = VirtualClock()
        clock.advance(.seconds(11))
        let gone = registry.expire(at: clock.now)
        #expect(gone == stride(from: 1, through: 99, by: 2).map { ReaderID(UInt32($0)) })
        #expect(registry.readers.map(\.id) == stride(from: 2, through: 100, by: 2).map { ReaderID(UInt32($0)) })
    }
}
