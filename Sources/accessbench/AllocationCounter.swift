import MallocInterposerSwift

#if canImport(Glibc)
    import Glibc
#endif

/// Counts heap allocations with ordo-one's malloc interposer. The interposer only sees
/// allocations when its library is preloaded, so `ensurePreloaded` re-executes the
/// benchmark once with `LD_PRELOAD` pointing at the library SwiftPM built beside it.
enum AllocationCounter {
    static let marker = "ACCESSBENCH_INTERPOSED"

    /// True when counting works in this process.
    static var isActive: Bool { getenv(marker) != nil }

    static func ensurePreloaded() {
        guard !isActive else { return }
        guard let executable = executablePath() else { return }
        let directory = String(executable[..<(executable.lastIndex(of: "/") ?? executable.endIndex)])
        let library = directory + "/libMallocInterposerSwift.so"
        guard access(library, R_OK) == 0 else { return }
        setenv("LD_PRELOAD", library, 1)
        setenv(marker, "1", 1)
        var arguments = CommandLine.arguments.map { strdup($0) }
        arguments.append(nil)
        execv(executable, &arguments)
        // execv returns only on failure: carry on without allocation counts.
        unsetenv(marker)
    }

    /// Allocations while `body` ran: calls, bytes requested, and bytes still held at the
    /// end (requested minus freed). Nil when counting is unavailable.
    static func measure(_ body: () -> Void) -> (count: Int, bytes: Int, retained: Int)? {
        guard isActive else {
            body()
            return nil
        }
        MallocInterposerSwift.initialize()
        MallocInterposerSwift.reset()
        MallocInterposerSwift.hook()
        body()
        MallocInterposerSwift.unhook()
        let statistics = MallocInterposerSwift.getStatistics()
        return (
            statistics.mallocCount, statistics.mallocBytesCount, statistics.mallocBytesCount - statistics.freeBytesCount
        )
    }

    private static func executablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
