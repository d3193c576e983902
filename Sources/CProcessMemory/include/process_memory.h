#ifndef ACCESSD_PROCESS_MEMORY_H
#define ACCESSD_PROCESS_MEMORY_H

/// How accessd's process uses memory, set before main (a constructor in process_memory.c), so
/// that nothing the runtime and libraries allocate at start escapes it. Measured with 1,000
/// readers heard (docs/performance.md, "Many readers"):
/// - no transparent huge pages (prctl PR_SET_THP_DISABLE): Debian's kernel backs anonymous
///   memory with 2 MB pages whenever it can ("always"), and a heap of a few MB then held up to
///   2 MB more for nothing;
/// - one malloc arena (mallopt M_ARENA_MAX): glibc gives threads arenas of their own (up to 8
///   a core), and what each kept after a burst of advertisements stayed resident: 0.3-1.3 MB
///   more, for no CPU saved (accessd's threads seldom allocate at once).
/// Applied again by calling it; 0, or the errno of prctl (EINVAL before Linux 3.15).
int accessd_configure_process_memory(void);

/// The main thread's work once accessd has started it on the cooperative pool: waiting for
/// signals, forever. An async `@main` ends the main thread in `dispatch_main()`, whose
/// `pthread_exit` has glibc unwind the main thread's stack, once: the unwinder's binary search
/// through a 30 MB program's unwind tables left 0.8 MB of them resident for the life of the
/// process. This waits as `dispatch_main` then does, without that exit.
__attribute__((noreturn)) void accessd_wait_on_main_thread(void);

#endif
