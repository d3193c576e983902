import BlueZTestSupport
import Testing

/// Runs each test of a suite on a thread of its own (`ThreadExecutor` says why): for suites
/// whose tests block on sockets and child processes.
public struct ThreadOfItsOwn: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    /// Each test case, not the suite around them (its tests would then share one thread).
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withThreadOfItsOwn(function)
    }
}

extension Trait where Self == ThreadOfItsOwn {
    /// Each test on a thread of its own.
    public static var threadOfItsOwn: Self { Self() }
}
