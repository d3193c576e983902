import Logging
import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc
#endif

/// The log level, changeable at run time (`log.setLevel`) and read by the log handler.
public final class LogLevelSetting: Sendable {
    private let level: NIOLockedValueBox<Logger.Level>

    public init(_ level: Logger.Level) {
        self.level = NIOLockedValueBox(level)
    }

    public var current: Logger.Level { level.withLockedValue { $0 } }

    public func set(_ level: Logger.Level) {
        self.level.withLockedValue { $0 = level }
    }
}
