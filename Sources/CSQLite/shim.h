#ifndef ACCESSD_CSQLITE_SHIM_H
#define ACCESSD_CSQLITE_SHIM_H

/* The system's SQLite (Debian: libsqlite3-0, libsqlite3-dev), which AccessStore uses
 * through its C API (Sources/AccessStore/SQLite). */
#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot import: SQLite
 * copies a value bound with it before sqlite3_bind_* returns. */
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }

#endif
