#include "mosquitto_library.h"

#include <dlfcn.h>
#include <stdio.h>

// Each field's type is checked against mosquitto.h's prototype at compile time (typeof
// of a declaration links nothing). dlsym returns void *; POSIX guarantees it converts to a
// function pointer.
#define FIND(field, function)                                                    \
    do {                                                                         \
        _Static_assert(__builtin_types_compatible_p(__typeof__(&function),       \
                                                    __typeof__(found.field)),    \
                       #function " has another type in mosquitto.h");            \
        const char *name = #function;                                            \
        void *symbol = dlsym(handle, name);                                      \
        if (symbol == NULL) {                                                    \
            snprintf(error, size, "%s: no %s: %s", library, name, dlerror());    \
            dlclose(handle);                                                     \
            return -1;                                                           \
        }                                                                        \
        *(void **)(&found.field) = symbol;                                       \
    } while (0)

int accessd_mosquitto_load(const char *library, struct accessd_mosquitto *functions, char *error,
                           unsigned long size) {
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        snprintf(error, size, "%s", dlerror());
        return -1;
    }
    struct accessd_mosquitto found;
    FIND(lib_init, mosquitto_lib_init);
    FIND(new_client, mosquitto_new);
    FIND(destroy, mosquitto_destroy);
    FIND(int_option, mosquitto_int_option);
    FIND(connect_callback_set, mosquitto_connect_callback_set);
    FIND(disconnect_callback_set, mosquitto_disconnect_callback_set);
    FIND(publish_callback_set, mosquitto_publish_callback_set);
    FIND(message_callback_set, mosquitto_message_callback_set);
    FIND(log_callback_set, mosquitto_log_callback_set);
    FIND(username_pw_set, mosquitto_username_pw_set);
    FIND(tls_set, mosquitto_tls_set);
    FIND(will_set, mosquitto_will_set);
    FIND(connect_async, mosquitto_connect_async);
    FIND(loop_start, mosquitto_loop_start);
    FIND(loop_stop, mosquitto_loop_stop);
    FIND(disconnect, mosquitto_disconnect);
    FIND(subscribe, mosquitto_subscribe);
    FIND(publish, mosquitto_publish);
    FIND(strerror, mosquitto_strerror);
    FIND(connack_string, mosquitto_connack_string);
    *functions = found;
    return 0;
}
