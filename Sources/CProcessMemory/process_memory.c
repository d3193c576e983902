#include "process_memory.h"

#include <errno.h>
#include <malloc.h>
#include <sys/prctl.h>

int accessd_configure_process_memory(void) {
    mallopt(M_ARENA_MAX, 1);
    // prctl is variadic, which Swift cannot call: one reason this is C.
    return prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0 ? 0 : errno;
}

// Before main and before any thread: the runtime's and libraries' first allocations too.
__attribute__((constructor)) static void configure_before_main(void) {
    (void)accessd_configure_process_memory();
}
