#ifndef ACCESSD_FATAL_SIGNALS_H
#define ACCESSD_FATAL_SIGNALS_H

/// Makes a fatal signal end the process after the Swift runtime's crash handler has printed
/// its backtrace, also when the signal was sent from outside (systemd's watchdog sends
/// SIGABRT). Call once, early in main, after the runtime installed its handlers.
/// Returns how many signals were wrapped.
int accessd_end_process_after_crash_handlers(void);

#endif
