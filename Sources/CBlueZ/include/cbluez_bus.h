/*
 * A libdbus connection driven by one thread of its own.
 *
 * Every libdbus call that touches the connection (send, send-with-reply, dispatch, watch
 * and timeout handling) runs on that thread: callers on any thread hand work over through
 * a queue and an eventfd, so nothing blocks the caller and no call waits on another
 * thread's poll timeout (docs/bluez.md). Replies, signals and method calls to exported
 * objects come back through callbacks, on the bus thread: a callback must return quickly.
 */
#ifndef CBLUEZ_BUS_H
#define CBLUEZ_BUS_H

#include <dbus/dbus.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cbz_bus cbz_bus;

/* Every incoming message that is not a reply: signals, and method calls to objects this
 * connection exports. The message is borrowed: dbus_message_ref it to keep it. Return 1 when
 * handled (a method call then needs a reply sent with cbz_bus_send), 0 otherwise. */
typedef int (*cbz_message_callback)(void *context, DBusMessage *message);

/* The reply to a call: an owned reference (error replies included; libdbus makes a
 * org.freedesktop.DBus.Error.NoReply on timeout), or NULL when the bus closed first. */
typedef void (*cbz_reply_callback)(void *context, DBusMessage *reply);

/* Called once on the bus thread after the connection is lost (peer closed, bus gone). */
typedef void (*cbz_disconnect_callback)(void *context);

/* Opens the system bus (address NULL) or the bus at address, registers with it and starts
 * the bus thread. On failure returns NULL and, when error_out is not NULL, a malloc'ed
 * message the caller frees with free(). */
cbz_bus *cbz_bus_open(const char *address, cbz_message_callback on_message, cbz_disconnect_callback on_disconnect,
                      void *context, char **error_out);

/* This connection's unique name (":1.42"); valid until cbz_bus_close. */
const char *cbz_bus_unique_name(cbz_bus *bus);

/* Queues a method call. on_reply runs exactly once, on the bus thread. Takes its own
 * reference to message. Returns 0, or -1 when the bus is closed (on_reply is not called). */
int cbz_bus_call(cbz_bus *bus, DBusMessage *message, int timeout_ms, cbz_reply_callback on_reply, void *context);

/* Queues a message that expects no reply (signal, method return, error). Takes its own
 * reference. Returns 0, or -1 when the bus is closed. */
int cbz_bus_send(cbz_bus *bus, DBusMessage *message);

/* Whether the connection is still up. */
int cbz_bus_is_connected(cbz_bus *bus);

/* Stops the bus thread, answers every queued or unanswered call with NULL and closes the
 * connection. Later calls and sends fail with -1. Idempotent; safe while other threads
 * call or send. Not to be called from a callback (it joins the bus thread). */
void cbz_bus_close(cbz_bus *bus);

/* Closes if needed and frees everything. Only when no other thread can use bus any more. */
void cbz_bus_free(cbz_bus *bus);

/* DBUS_TYPE_* are macros of the form ((int) 's'), which Swift cannot import. */
extern const int CBZ_TYPE_INVALID, CBZ_TYPE_BYTE, CBZ_TYPE_BOOLEAN, CBZ_TYPE_INT16, CBZ_TYPE_UINT16,
    CBZ_TYPE_INT32, CBZ_TYPE_UINT32, CBZ_TYPE_INT64, CBZ_TYPE_UINT64, CBZ_TYPE_DOUBLE, CBZ_TYPE_STRING,
    CBZ_TYPE_OBJECT_PATH, CBZ_TYPE_SIGNATURE, CBZ_TYPE_UNIX_FD, CBZ_TYPE_ARRAY, CBZ_TYPE_VARIANT,
    CBZ_TYPE_STRUCT, CBZ_TYPE_DICT_ENTRY;
extern const int CBZ_MESSAGE_TYPE_METHOD_CALL, CBZ_MESSAGE_TYPE_METHOD_RETURN, CBZ_MESSAGE_TYPE_ERROR,
    CBZ_MESSAGE_TYPE_SIGNAL;

#ifdef __cplusplus
}
#endif

#endif
