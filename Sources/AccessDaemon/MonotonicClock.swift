import AccessCore

#if canImport(Glibc)
    import Glibc
#endif

/// The shell's clocks: CLOCK_MONOTONIC for the core's timers and ranges, the wall clock
/// for event timestamps people read.
enum Clocks {
    /// Timestamps on `clock` (elapsed since this call): the core's time for a service whose
    /// timers run on an injected clock, so a test's virtual clock ages what it looks at too.
    static func timeSource<C: Clock<Duration>>(_ clock: C) -> @Sendable () -> Timestamp {
        let origin = clock.now
        return { Timestamp(nanoseconds: origin.duration(to: clock.now).nanoseconds) }
    }

    static func monotonic() -> Timestamp {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Timestamp(nanoseconds: Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec))
    }

    /// Seconds since 1970, with milliseconds.
    static func wall() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return (Double(now.tv_sec) + Double(now.tv_nsec / 1_000_000) / 1000)
    }
}
