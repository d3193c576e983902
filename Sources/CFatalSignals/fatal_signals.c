// Why this exists: the Swift runtime's crash handler prints every thread's backtrace and then
// returns, trusting the faulting instruction to fault again with the default action. That
// holds for a crash inside the process, but a fatal signal sent from outside (systemd's
// watchdog sends SIGABRT, an operator `kill -ABRT`) has no instruction to repeat: the process
// went on running, hung, until systemd's SIGKILL ten seconds later. Wrapping the runtime's
// handler lets it print, then ends the process with the same signal, so systemd sees the
// crash at once (and restarts). No listed package does this; it is a few lines of sigaction.
#include "fatal_signals.h"

#include <signal.h>
#include <stddef.h>

static const int fatal_signals[] = {SIGQUIT, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGSEGV, SIGTRAP};

// The runtime's handlers, by signal number; written once before any is installed.
static struct sigaction previous[NSIG];

static void end_after_previous(int signal_number, siginfo_t *info, void *context) {
    const struct sigaction *runtime = &previous[signal_number];
    if (runtime->sa_flags & SA_SIGINFO) {
        runtime->sa_sigaction(signal_number, info, context);
    } else if (runtime->sa_handler != SIG_DFL && runtime->sa_handler != SIG_IGN) {
        runtime->sa_handler(signal_number);
    }
    struct sigaction default_action = {.sa_handler = SIG_DFL};
    sigemptyset(&default_action.sa_mask);
    sigaction(signal_number, &default_action, NULL);
    // Blocked while this handler runs: delivered, with the default action, as it returns.
    raise(signal_number);
}

int accessd_end_process_after_crash_handlers(void) {
    int wrapped = 0;
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
        int number = fatal_signals[i];
        struct sigaction current;
        if (sigaction(number, NULL, &current) != 0) continue;
        int has_handler = (current.sa_flags & SA_SIGINFO)
            || (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN);
        if (!has_handler) continue;
        previous[number] = current;
        struct sigaction wrapper = current;
        wrapper.sa_flags |= SA_SIGINFO;
        wrapper.sa_flags &= ~SA_NODEFER;
        wrapper.sa_sigaction = end_after_previous;
        if (sigaction(number, &wrapper, NULL) == 0) wrapped++;
    }
    return wrapped;
}
