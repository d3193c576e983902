#include "process_memory.h"

#include <pthread.h>
#include <signal.h>

// What libdispatch's dispatch_main() leaves the main thread doing (its _dispatch_sig_thread:
// waiting in sigsuspend with no signal blocked, so that a signal sent to the process, such as
// systemd's SIGTERM or its watchdog's SIGABRT, has a thread to land on), without the
// pthread_exit before it. In C so that a crash backtrace names this frame.
__attribute__((noreturn)) void accessd_wait_on_main_thread(void) {
    sigset_t none;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, NULL);
    for (;;) sigsuspend(&none);
}
