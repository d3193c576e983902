import AccessStore

extension DataKey {
    /// One fixed key for a test's stores, so that a store reopened in the same test opens its secrets.
    static let forTests = try! DataKey(bytes: Array(repeating: 0x5a, count: 32), protection: .keyFile, origin: "test")
}
