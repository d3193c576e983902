import Testing

@testable import BlueZ

@Suite(.timeLimit(.minutes(5)))
/// The bounded queue the BlueZ client and the engines' doors are built on.
struct CoalescingQueueTests {
    /// Takes what waits now (the queue is not finished: a consumer would wait for more).
    func drain(_ queue: CoalescingQueue<String>) async -> [String] {
        var taken: [String] = []
        while queue.counts.waiting > 0, let next = await queue.next() { taken.append(next) }
        return taken
    }

    @Test func aKeyedElementTakesThePlaceOfTheOneWaitingUnderItsKey() async {
        let queue = CoalescingQueue<String>(capacity: 10)
        queue.post("a1", key: "a")
        queue.post("b1", key: "b")
        #expect(queue.post("a2", key: "a") == .coalesced)
        #expect(await drain(queue) == ["a2", "b1"])
        #expect(queue.counts.coalesced == 1)
    }

    /// A device's report after its disconnection must not be taken before it.
    @Test func nothingMergesAcrossAnElementWithoutAKey() async {
        let queue = CoalescingQueue<String>(capacity: 10)
        queue.post("a1", key: "a")
        queue.post("disconnected")
        #expect(queue.post("a2", key: "a") == .queued)
        #expect(await drain(queue) == ["a1", "disconnected", "a2"])
    }

    @Test func pastItsCapacityAPostIsRefusedAndCountedButAWaitingKeyStillMerges() async {
        let queue = CoalescingQueue<String>(capacity: 3)
        for name in ["a", "b", "c"] { queue.post(name + "1", key: name) }
        #expect(queue.post("d1", key: "d") == .dropped)
        #expect(queue.post("lifecycle") == .dropped)
        #expect(queue.counts.dropped == 2)
        #expect(queue.post("b2", key: "b") == .coalesced)
        #expect(await drain(queue) == ["a1", "b2", "c1"])
        #expect(queue.post("after") == .queued)
    }

    @Test func aResetReplacesWhatWaits() async {
        let queue = CoalescingQueue<String>(capacity: 2)
        queue.post("old1", key: "a")
        queue.post("old2")
        queue.reset(to: ["gone", "back"])
        #expect(await drain(queue) == ["gone", "back"])
    }

    @Test func aWaitingConsumerGetsThePostAndFinishEndsIt() async {
        let queue = CoalescingQueue<String>(capacity: 2)
        let consumer = Task { () -> [String] in
            var taken: [String] = []
            for await element in queue { taken.append(element) }
            return taken
        }
        for index in 0..<100 {
            while queue.post("\(index)") == .dropped { await Task.yield() }
        }
        queue.finish()
        #expect(await consumer.value == (0..<100).map(String.init))
    }

    @Test func aCancelledConsumerStops() async {
        let queue = CoalescingQueue<String>(capacity: 2)
        let consumer = Task { () -> Int in
            var count = 0
            for await _ in queue { count += 1 }
            return count
        }
        try? await Task.sleep(for: .milliseconds(20))
        consumer.cancel()
        #expect(await consumer.value == 0)
    }
}
