#ifndef ACCESSD_MOSQUITTO_LIBRARY_H
#define ACCESSD_MOSQUITTO_LIBRARY_H

#include <mosquitto.h>

/// libmosquitto's functions the fleet bridge calls, found in libmosquitto.so.1 when the bridge
/// first starts rather than by the dynamic linker at every start: the library brings OpenSSL's
/// libcrypto and libssl, whose loading and relocations kept ~1.4 MB resident in every accessd,
/// fleet or not (docs/performance.md, "Many readers"). Each field is the library's function of
/// the same name without the `mosquitto_` prefix.
struct accessd_mosquitto {
    int (*_Nonnull lib_init)(void);
    struct mosquitto *_Nullable (*_Nonnull new_client)(const char *_Nullable id, bool clean_session,
                                                       void *_Nullable obj);
    void (*_Nonnull destroy)(struct mosquitto *_Nonnull mosq);
    int (*_Nonnull int_option)(struct mosquitto *_Nonnull mosq, enum mosq_opt_t option, int value);
    void (*_Nonnull connect_callback_set)(struct mosquitto *_Nonnull mosq,
                                          void (*_Nullable on_connect)(struct mosquitto *_Nullable, void *_Nullable, int));
    void (*_Nonnull disconnect_callback_set)(struct mosquitto *_Nonnull mosq,
                                             void (*_Nullable on_disconnect)(struct mosquitto *_Nullable, void *_Nullable,
                                                                             int));
    void (*_Nonnull publish_callback_set)(struct mosquitto *_Nonnull mosq,
                                          void (*_Nullable on_publish)(struct mosquitto *_Nullable, void *_Nullable, int));
    void (*_Nonnull message_callback_set)(struct mosquitto *_Nonnull mosq,
                                          void (*_Nullable on_message)(struct mosquitto *_Nullable, void *_Nullable,
                                                                       const struct mosquitto_message *_Nullable));
    void (*_Nonnull log_callback_set)(struct mosquitto *_Nonnull mosq,
                                      void (*_Nullable on_log)(struct mosquitto *_Nullable, void *_Nullable, int,
                                                               const char *_Nullable));
    int (*_Nonnull username_pw_set)(struct mosquitto *_Nonnull mosq, const char *_Nullable username,
                                    const char *_Nullable password);
    int (*_Nonnull tls_set)(struct mosquitto *_Nonnull mosq, const char *_Nullable cafile, const char *_Nullable capath,
                            const char *_Nullable certfile, const char *_Nullable keyfile,
                            int (*_Nullable pw_callback)(char *_Nullable buf, int size, int rwflag,
                                                         void *_Nullable userdata));
    int (*_Nonnull will_set)(struct mosquitto *_Nonnull mosq, const char *_Nonnull topic, int payloadlen,
                             const void *_Nullable payload, int qos, bool retain);
    int (*_Nonnull connect_async)(struct mosquitto *_Nonnull mosq, const char *_Nonnull host, int port, int keepalive);
    int (*_Nonnull loop_start)(struct mosquitto *_Nonnull mosq);
    int (*_Nonnull loop_stop)(struct mosquitto *_Nonnull mosq, bool force);
    int (*_Nonnull disconnect)(struct mosquitto *_Nonnull mosq);
    int (*_Nonnull subscribe)(struct mosquitto *_Nonnull mosq, int *_Nullable mid, const char *_Nonnull sub, int qos);
    int (*_Nonnull publish)(struct mosquitto *_Nonnull mosq, int *_Nullable mid, const char *_Nonnull topic,
                            int payloadlen, const void *_Nullable payload, int qos, bool retain);
    const char *_Nonnull (*_Nonnull strerror)(int mosq_errno);
    const char *_Nonnull (*_Nonnull connack_string)(int connack_code);
};

/// Loads `library` (accessd passes "libmosquitto.so.1") and finds every function above in it,
/// into `functions`. 0 on success (the library then stays loaded for the life of the process:
/// its threads may outlive a client); -1 when the library or one of its functions is missing,
/// with dlerror's reason in `error` (truncated to `size`).
int accessd_mosquitto_load(const char *_Nonnull library, struct accessd_mosquitto *_Nonnull functions,
                           char *_Nonnull error, unsigned long size);

#endif
