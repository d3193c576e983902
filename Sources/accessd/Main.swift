#if canImport(Glibc)
import Glibc
#endif

/// accessd's entry point: the command runs on the cooperative pool and ends the process; the
/// main thread only waits.
///
/// Why not `AsyncParsableCommand`'s own async main: its main thread ends in `dispatch_main()`,
/// which calls `pthread_exit`, and glibc unwinds the main thread's stack for that, once, at
/// start. The unwinder's binary search through the unwind tables of a 30 MB program touched
/// pages all over them: 0.8 MB resident for the life of the process (`.eh_frame_hdr` and
/// `.eh_frame`; docs/performance.md, "Many readers"). Nothing in accessd runs on the main
/// actor (whose queue the main thread would drain): the command is started detached from it.
@main
enum AccessdMain {
    static func main() {
        Task.detached {
            // Returns when the service stopped; exits by itself with its status otherwise.
            await AccessdCommand.main()
            exit(0)
        }
        while true { pause() }
    }
}
