import BlueZ

/// The engines' doors are `CoalescingQueue`s, bounded: `yield` as on the `AsyncStream`
/// continuations they replace (issue #31: the doors were unbounded, and every advertisement
/// of every device crossed them).
extension CoalescingQueue where Element == AccessEngine.Input {
    /// A reader's advertisements wait under its device path and merge; every other input
    /// keeps its place.
    func yield(_ input: AccessEngine.Input) {
        if case .advertised(let device) = input {
            post(input, key: device.path)
        } else {
            post(input)
        }
    }
}

extension CoalescingQueue where Element == ExchangeCommand {
    /// Commands never merge: a link dropped, an exchange started and a Disconnect are each
    /// one step of a link's life.
    func yield(_ command: ExchangeCommand) {
        post(command)
    }
}

extension ExchangeEngine {
    typealias Door = CoalescingQueue<ExchangeCommand>
    /// Commands that may wait: a few per exchange or held link (bounded by
    /// `[access] connection_limit`) and a link report per reader device.
    static let doorCapacity = 4096
}
