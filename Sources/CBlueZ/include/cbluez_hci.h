/* Local HCI adapters through libbluetooth, for diagnostics and when bluetoothd is absent. */
#ifndef CBLUEZ_HCI_H
#define CBLUEZ_HCI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cbz_hci_adapter {
    int index;          /* N of hciN */
    char name[8];       /* "hci0" */
    uint8_t address[6]; /* display order */
    int up;             /* HCI_UP flag */
    int bus_type;       /* HCI_VIRTUAL 0, HCI_USB 1, ... (hci.h) */
} cbz_hci_adapter;

/* Fills up to max adapters; returns how many, or -errno (-EAFNOSUPPORT when the kernel has
 * no Bluetooth, -EPERM/-EACCES when refused). */
int cbz_hci_list(cbz_hci_adapter *out, int max);

#ifdef __cplusplus
}
#endif

#endif
