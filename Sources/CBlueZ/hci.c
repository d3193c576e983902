#include "cbluez_hci.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>

int cbz_hci_list(cbz_hci_adapter *out, int max)
{
    if (max <= 0 || max > HCI_MAX_DEV)
        max = HCI_MAX_DEV;
    int sock = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI);
    if (sock < 0)
        return -errno;

    struct hci_dev_list_req *list = calloc(1, sizeof *list + HCI_MAX_DEV * sizeof(struct hci_dev_req));
    if (!list) {
        close(sock);
        return -ENOMEM;
    }
    list->dev_num = HCI_MAX_DEV;
    if (ioctl(sock, HCIGETDEVLIST, list) < 0) {
        int error = errno;
        free(list);
        close(sock);
        return -error;
    }
    int count = 0;
    for (int i = 0; i < list->dev_num && count < max; i++) {
        struct hci_dev_info info;
        memset(&info, 0, sizeof info);
        info.dev_id = list->dev_req[i].dev_id;
        if (ioctl(sock, HCIGETDEVINFO, &info) < 0)
            continue; /* removed between the two calls */
        cbz_hci_adapter *adapter = &out[count++];
        adapter->index = info.dev_id;
        snprintf(adapter->name, sizeof adapter->name, "%s", info.name);
        for (int b = 0; b < 6; b++)
            adapter->address[b] = info.bdaddr.b[5 - b];
        adapter->up = hci_test_bit(HCI_UP, &info.flags) ? 1 : 0;
        adapter->bus_type = info.type & 0x0f;
    }
    free(list);
    close(sock);
    return count;
}
