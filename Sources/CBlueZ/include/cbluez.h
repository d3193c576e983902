/*
 * CBlueZ: the C shim between Swift and libdbus-1 / libbluetooth.
 *
 * No policy lives here: the shim converts types and hides the parts of the C
 * APIs Swift cannot import (macros, variadic functions, 32-bit dbus_bool_t).
 */
#ifndef CBLUEZ_H
#define CBLUEZ_H

#include <stdint.h>
#include <stddef.h>

#include "cbluez_bus.h"
#include "cbluez_hci.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A Bluetooth device address in display order (most significant byte first). */
typedef struct cbz_address {
    uint8_t bytes[6];
} cbz_address;

/* Parses "AA:BB:CC:DD:EE:FF" (case-insensitive). Returns 0 on success, -1 on bad input. */
int cbz_address_parse(const char *text, cbz_address *out);

/* Formats as upper-case "AA:BB:CC:DD:EE:FF" into buf (at least 18 bytes). */
void cbz_address_format(const cbz_address *address, char buf[18]);

/* The version of the libdbus-1 the process runs with. */
void cbz_dbus_version(int *major, int *minor, int *micro);

#ifdef __cplusplus
}
#endif

#endif
