#include "cbluez.h"

#include <dbus/dbus.h>

void cbz_dbus_version(int *major, int *minor, int *micro)
{
    dbus_get_version(major, minor, micro);
}
