import AccessctlCommands
import CProcessMemory

#if canImport(Glibc)
    import Glibc
#endif

/// accessd's entry point: the command runs on the cooperative pool and ends the process; the
/// main thread waits for signals.
///
/// Why not `AsyncParsableCommand`'s own async main: its main thread ends in `dispatch_main()`,
/// whose `pthread_exit` has glibc unwind the main thread's stack, once, at start, and the
/// unwinder's binary search through the unwind tables of a 30 MB program left 0.8 MB of them
/// resident for the life of the process (docs/performance.md, "Many readers").
/// `accessd_wait_on_main_thread` then waits as `dispatch_main` would have, in C so that a
/// backtrace of a signal landing there (the watchdog's SIGABRT) names a frame in accessd.
/// Nothing in accessd runs on the main actor, whose queue only `dispatch_main` would drain:
/// the command is started detached from it.
///
/// One binary is two programs (busybox and systemd style): started under the name accessctl
/// (the package's `/usr/bin/accessctl` links here), it is the client, run on this thread as
/// the `accessctl` executable runs it, so the package carries the Swift runtime, Foundation
/// and the libraries once (issue #37).
@main
enum AccessdMain {
    static func main() {
        if programName == "accessctl" {
            Accessctl.main()
            return
        }
        Task.detached {
            // Exits by itself with its status when it fails; returns when the service stopped.
            await AccessdCommand.main()
            exit(0)
        }
        accessd_wait_on_main_thread()
    }
}

/// The name this process was started under: the last component of `argv[0]`.
private var programName: Substring {
    CommandLine.arguments.first?.split(separator: "/").last ?? ""
}
