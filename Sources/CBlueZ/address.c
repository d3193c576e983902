#include "cbluez.h"

#include <ctype.h>
#include <string.h>

#include <sys/socket.h>
#include <bluetooth/bluetooth.h>

int cbz_address_parse(const char *text, cbz_address *out)
{
    /* libbluetooth's str2ba accepts malformed strings silently (it reads what sscanf
     * can and zero-fills the rest), so the shape is checked here first. */
    if (text == NULL || out == NULL || strlen(text) != 17)
        return -1;
    for (int i = 0; i < 17; i++) {
        if (i % 3 == 2) {
            if (text[i] != ':')
                return -1;
        } else if (!isxdigit((unsigned char)text[i])) {
            return -1;
        }
    }
    bdaddr_t ba;
    if (str2ba(text, &ba) != 0)
        return -1;
    /* bdaddr_t is little-endian (over-the-air order); cbz_address is display order. */
    for (int i = 0; i < 6; i++)
        out->bytes[i] = ba.b[5 - i];
    return 0;
}

void cbz_address_format(const cbz_address *address, char buf[18])
{
    bdaddr_t ba;
    for (int i = 0; i < 6; i++)
        ba.b[i] = address->bytes[5 - i];
    ba2str(&ba, buf);
}
