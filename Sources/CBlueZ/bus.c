#define _GNU_SOURCE
#include "cbluez_bus.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

const int CBZ_TYPE_INVALID = DBUS_TYPE_INVALID, CBZ_TYPE_BYTE = DBUS_TYPE_BYTE, CBZ_TYPE_BOOLEAN = DBUS_TYPE_BOOLEAN,
          CBZ_TYPE_INT16 = DBUS_TYPE_INT16, CBZ_TYPE_UINT16 = DBUS_TYPE_UINT16, CBZ_TYPE_INT32 = DBUS_TYPE_INT32,
          CBZ_TYPE_UINT32 = DBUS_TYPE_UINT32, CBZ_TYPE_INT64 = DBUS_TYPE_INT64, CBZ_TYPE_UINT64 = DBUS_TYPE_UINT64,
          CBZ_TYPE_DOUBLE = DBUS_TYPE_DOUBLE, CBZ_TYPE_STRING = DBUS_TYPE_STRING,
          CBZ_TYPE_OBJECT_PATH = DBUS_TYPE_OBJECT_PATH, CBZ_TYPE_SIGNATURE = DBUS_TYPE_SIGNATURE,
          CBZ_TYPE_UNIX_FD = DBUS_TYPE_UNIX_FD, CBZ_TYPE_ARRAY = DBUS_TYPE_ARRAY, CBZ_TYPE_VARIANT = DBUS_TYPE_VARIANT,
          CBZ_TYPE_STRUCT = DBUS_TYPE_STRUCT, CBZ_TYPE_DICT_ENTRY = DBUS_TYPE_DICT_ENTRY;
const int CBZ_MESSAGE_TYPE_METHOD_CALL = DBUS_MESSAGE_TYPE_METHOD_CALL,
          CBZ_MESSAGE_TYPE_METHOD_RETURN = DBUS_MESSAGE_TYPE_METHOD_RETURN,
          CBZ_MESSAGE_TYPE_ERROR = DBUS_MESSAGE_TYPE_ERROR, CBZ_MESSAGE_TYPE_SIGNAL = DBUS_MESSAGE_TYPE_SIGNAL;

/* Work handed to the bus thread. */
typedef struct job {
    struct job *next;
    DBusMessage *message;
    int timeout_ms;
    cbz_reply_callback on_reply; /* NULL: plain send */
    void *context;
} job;

/* A call sent and not yet answered. Kept in a list so that closing the bus can answer
 * it: libdbus does not complete pending calls when a private connection is closed. */
typedef struct reply_box {
    struct reply_box *prev, *next;
    struct cbz_bus *bus;
    DBusPendingCall *pending;
    cbz_reply_callback on_reply;
    void *context;
} reply_box;

struct cbz_bus {
    DBusConnection *connection;
    pthread_t thread;
    int wake_fd;
    atomic_int stopping;
    atomic_int connected;

    cbz_message_callback on_message;
    cbz_disconnect_callback on_disconnect;
    void *context;

    /* Guards the job queue and the watch/timeout lists: libdbus may add, remove or toggle
     * watches from whichever thread holds its connection lock. */
    pthread_mutex_t lock;
    job *queue_head, *queue_tail;
    reply_box *outstanding; /* only touched on the bus thread, or after it has stopped */
    DBusWatch **watches;
    size_t watch_count, watch_capacity;
    DBusTimeout **timeouts;
    int64_t *deadlines; /* monotonic ms, parallel to timeouts */
    size_t timeout_count, timeout_capacity;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void wake(cbz_bus *bus)
{
    uint64_t one = 1;
    ssize_t ignored = write(bus->wake_fd, &one, sizeof one);
    (void)ignored; /* a full eventfd counter still wakes the poller */
}

/* ---- watches and timeouts (called by libdbus, any thread) ---- */

static dbus_bool_t add_watch(DBusWatch *watch, void *data)
{
    cbz_bus *bus = data;
    pthread_mutex_lock(&bus->lock);
    if (bus->watch_count == bus->watch_capacity) {
        size_t capacity = bus->watch_capacity ? bus->watch_capacity * 2 : 4;
        DBusWatch **grown = realloc(bus->watches, capacity * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&bus->lock);
            return FALSE;
        }
        bus->watches = grown;
        bus->watch_capacity = capacity;
    }
    bus->watches[bus->watch_count++] = watch;
    pthread_mutex_unlock(&bus->lock);
    wake(bus);
    return TRUE;
}

static void remove_watch(DBusWatch *watch, void *data)
{
    cbz_bus *bus = data;
    pthread_mutex_lock(&bus->lock);
    for (size_t i = 0; i < bus->watch_count; i++) {
        if (bus->watches[i] == watch) {
            bus->watches[i] = bus->watches[--bus->watch_count];
            break;
        }
    }
    pthread_mutex_unlock(&bus->lock);
    wake(bus);
}

static void toggle_watch(DBusWatch *watch, void *data)
{
    (void)watch;
    wake(data); /* the poll set is rebuilt from dbus_watch_get_enabled on every pass */
}

static dbus_bool_t add_timeout(DBusTimeout *timeout, void *data)
{
    cbz_bus *bus = data;
    pthread_mutex_lock(&bus->lock);
    if (bus->timeout_count == bus->timeout_capacity) {
        size_t capacity = bus->timeout_capacity ? bus->timeout_capacity * 2 : 8;
        DBusTimeout **grown = realloc(bus->timeouts, capacity * sizeof *grown);
        int64_t *grown_deadlines = grown ? realloc(bus->deadlines, capacity * sizeof *grown_deadlines) : NULL;
        if (grown)
            bus->timeouts = grown;
        if (!grown || !grown_deadlines) {
            pthread_mutex_unlock(&bus->lock);
            return FALSE;
        }
        bus->deadlines = grown_deadlines;
        bus->timeout_capacity = capacity;
    }
    bus->timeouts[bus->timeout_count] = timeout;
    bus->deadlines[bus->timeout_count] = now_ms() + dbus_timeout_get_interval(timeout);
    bus->timeout_count++;
    pthread_mutex_unlock(&bus->lock);
    wake(bus);
    return TRUE;
}

static void remove_timeout(DBusTimeout *timeout, void *data)
{
    cbz_bus *bus = data;
    pthread_mutex_lock(&bus->lock);
    for (size_t i = 0; i < bus->timeout_count; i++) {
        if (bus->timeouts[i] == timeout) {
            bus->timeout_count--;
            bus->timeouts[i] = bus->timeouts[bus->timeout_count];
            bus->deadlines[i] = bus->deadlines[bus->timeout_count];
            break;
        }
    }
    pthread_mutex_unlock(&bus->lock);
    wake(bus);
}

static void toggle_timeout(DBusTimeout *timeout, void *data)
{
    cbz_bus *bus = data;
    pthread_mutex_lock(&bus->lock);
    for (size_t i = 0; i < bus->timeout_count; i++) {
        if (bus->timeouts[i] == timeout)
            bus->deadlines[i] = now_ms() + dbus_timeout_get_interval(timeout);
    }
    pthread_mutex_unlock(&bus->lock);
    wake(bus);
}

static void wakeup_main(void *data)
{
    wake(data);
}

/* ---- messages ---- */

static DBusHandlerResult filter(DBusConnection *connection, DBusMessage *message, void *data)
{
    (void)connection;
    cbz_bus *bus = data;
    if (dbus_message_is_signal(message, DBUS_INTERFACE_LOCAL, "Disconnected")) {
        if (atomic_exchange(&bus->connected, 0) && bus->on_disconnect)
            bus->on_disconnect(bus->context);
        return DBUS_HANDLER_RESULT_HANDLED;
    }
    if (bus->on_message && bus->on_message(bus->context, message))
        return DBUS_HANDLER_RESULT_HANDLED;
    return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
}

static void unlink_box(cbz_bus *bus, reply_box *box)
{
    if (box->prev)
        box->prev->next = box->next;
    else if (bus->outstanding == box)
        bus->outstanding = box->next;
    if (box->next)
        box->next->prev = box->prev;
    box->prev = box->next = NULL;
}

static void reply_arrived(DBusPendingCall *pending, void *data)
{
    reply_box *box = data;
    unlink_box(box->bus, box);
    box->pending = NULL;
    DBusMessage *reply = dbus_pending_call_steal_reply(pending);
    box->on_reply(box->context, reply);
    dbus_pending_call_unref(pending);
}

static void run_job(cbz_bus *bus, job *work)
{
    if (!work->on_reply) {
        dbus_connection_send(bus->connection, work->message, NULL);
        return;
    }
    DBusPendingCall *pending = NULL;
    reply_box *box = malloc(sizeof *box);
    if (box && dbus_connection_send_with_reply(bus->connection, work->message, &pending, work->timeout_ms) && pending) {
        box->bus = bus;
        box->pending = pending;
        box->on_reply = work->on_reply;
        box->context = work->context;
        box->prev = NULL;
        box->next = bus->outstanding;
        /* Safe without a race: only this thread reads the socket, so the reply cannot
         * complete the pending call before the notify function is set. */
        if (dbus_pending_call_set_notify(pending, reply_arrived, box, free)) {
            if (bus->outstanding)
                bus->outstanding->prev = box;
            bus->outstanding = box;
            return;
        }
        dbus_pending_call_cancel(pending);
        dbus_pending_call_unref(pending);
        work->on_reply(work->context, NULL);
        return;
    }
    free(box);
    work->on_reply(work->context, NULL);
}

static job *take_jobs(cbz_bus *bus)
{
    pthread_mutex_lock(&bus->lock);
    job *head = bus->queue_head;
    bus->queue_head = bus->queue_tail = NULL;
    pthread_mutex_unlock(&bus->lock);
    return head;
}

static void finish_jobs(job *head, int run, cbz_bus *bus)
{
    while (head) {
        job *next = head->next;
        if (run)
            run_job(bus, head);
        else if (head->on_reply)
            head->on_reply(head->context, NULL);
        dbus_message_unref(head->message);
        free(head);
        head = next;
    }
}

/* ---- the bus thread ---- */

static void *bus_thread(void *data)
{
    cbz_bus *bus = data;
    struct pollfd *fds = NULL;
    DBusWatch **polled = NULL;
    size_t capacity = 0;

    while (!atomic_load(&bus->stopping)) {
        finish_jobs(take_jobs(bus), 1, bus);
        while (dbus_connection_dispatch(bus->connection) == DBUS_DISPATCH_DATA_REMAINS) {
        }

        /* Build the poll set and the nearest timeout under the lock. */
        pthread_mutex_lock(&bus->lock);
        size_t needed = bus->watch_count + 1;
        if (needed > capacity) {
            struct pollfd *grown_fds = realloc(fds, needed * sizeof *fds);
            DBusWatch **grown_polled = grown_fds ? realloc(polled, needed * sizeof *polled) : NULL;
            if (grown_fds)
                fds = grown_fds;
            if (grown_polled) {
                polled = grown_polled;
                capacity = needed;
            }
        }
        size_t count = 0;
        if (capacity >= 1) {
            fds[count].fd = bus->wake_fd;
            fds[count].events = POLLIN;
            polled[count++] = NULL;
        }
        for (size_t i = 0; i < bus->watch_count && count < capacity; i++) {
            DBusWatch *watch = bus->watches[i];
            if (!dbus_watch_get_enabled(watch))
                continue;
            unsigned flags = dbus_watch_get_flags(watch);
            fds[count].fd = dbus_watch_get_unix_fd(watch);
            fds[count].events = (flags & DBUS_WATCH_READABLE ? POLLIN : 0) | (flags & DBUS_WATCH_WRITABLE ? POLLOUT : 0);
            polled[count++] = watch;
        }
        int64_t now = now_ms(), wait = -1;
        for (size_t i = 0; i < bus->timeout_count; i++) {
            if (!dbus_timeout_get_enabled(bus->timeouts[i]))
                continue;
            int64_t left = bus->deadlines[i] - now;
            if (left < 0)
                left = 0;
            if (wait < 0 || left < wait)
                wait = left;
        }
        pthread_mutex_unlock(&bus->lock);

        int ready = poll(fds, count, (int)(wait > 60000 ? 60000 : wait));
        if (ready < 0 && errno != EINTR)
            break;

        for (size_t i = 0; ready > 0 && i < count; i++) {
            if (!fds[i].revents)
                continue;
            if (!polled[i]) {
                uint64_t value;
                ssize_t ignored = read(bus->wake_fd, &value, sizeof value);
                (void)ignored;
                continue;
            }
            unsigned flags = 0;
            if (fds[i].revents & POLLIN)
                flags |= DBUS_WATCH_READABLE;
            if (fds[i].revents & POLLOUT)
                flags |= DBUS_WATCH_WRITABLE;
            if (fds[i].revents & POLLERR)
                flags |= DBUS_WATCH_ERROR;
            if (fds[i].revents & POLLHUP)
                flags |= DBUS_WATCH_HANGUP;
            /* The watch may have been removed by an earlier handle in this pass. */
            pthread_mutex_lock(&bus->lock);
            int still_there = 0;
            for (size_t w = 0; w < bus->watch_count; w++)
                still_there |= bus->watches[w] == polled[i];
            pthread_mutex_unlock(&bus->lock);
            if (still_there)
                dbus_watch_handle(polled[i], flags);
        }

        /* Fire due timeouts, one at a time: handling one may add or remove others. */
        for (;;) {
            DBusTimeout *due = NULL;
            pthread_mutex_lock(&bus->lock);
            int64_t t = now_ms();
            for (size_t i = 0; i < bus->timeout_count; i++) {
                if (dbus_timeout_get_enabled(bus->timeouts[i]) && bus->deadlines[i] <= t) {
                    due = bus->timeouts[i];
                    bus->deadlines[i] = t + dbus_timeout_get_interval(due);
                    break;
                }
            }
            pthread_mutex_unlock(&bus->lock);
            if (!due)
                break;
            dbus_timeout_handle(due);
        }
    }
    free(fds);
    free(polled);
    return NULL;
}

/* ---- public API ---- */

cbz_bus *cbz_bus_open(const char *address, cbz_message_callback on_message, cbz_disconnect_callback on_disconnect,
                      void *context, char **error_out)
{
    if (error_out)
        *error_out = NULL;
    dbus_threads_init_default();

    DBusError error;
    dbus_error_init(&error);
    DBusConnection *connection = address ? dbus_connection_open_private(address, &error)
                                         : dbus_bus_get_private(DBUS_BUS_SYSTEM, &error);
    if (connection && address && !dbus_bus_register(connection, &error)) {
        dbus_connection_close(connection);
        dbus_connection_unref(connection);
        connection = NULL;
    }
    if (!connection) {
        if (error_out)
            *error_out = strdup(dbus_error_is_set(&error) ? error.message : "cannot connect to the bus");
        dbus_error_free(&error);
        return NULL;
    }
    dbus_connection_set_exit_on_disconnect(connection, FALSE);

    cbz_bus *bus = calloc(1, sizeof *bus);
    if (!bus)
        goto fail_connection;
    bus->connection = connection;
    bus->on_message = on_message;
    bus->on_disconnect = on_disconnect;
    bus->context = context;
    atomic_store(&bus->connected, 1);
    pthread_mutex_init(&bus->lock, NULL);
    bus->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (bus->wake_fd < 0)
        goto fail_bus;

    if (!dbus_connection_set_watch_functions(connection, add_watch, remove_watch, toggle_watch, bus, NULL) ||
        !dbus_connection_set_timeout_functions(connection, add_timeout, remove_timeout, toggle_timeout, bus, NULL) ||
        !dbus_connection_add_filter(connection, filter, bus, NULL))
        goto fail_fd;
    dbus_connection_set_wakeup_main_function(connection, wakeup_main, bus, NULL);

    /* The bus thread must not take signals meant for the process (SIGTERM is handled by
     * the service), so it starts with all of them blocked. */
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    int started = pthread_create(&bus->thread, NULL, bus_thread, bus);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    if (started != 0)
        goto fail_functions;
    return bus;

fail_functions:
    dbus_connection_remove_filter(connection, filter, bus);
    dbus_connection_set_watch_functions(connection, NULL, NULL, NULL, NULL, NULL);
    dbus_connection_set_timeout_functions(connection, NULL, NULL, NULL, NULL, NULL);
fail_fd:
    close(bus->wake_fd);
fail_bus:
    pthread_mutex_destroy(&bus->lock);
    free(bus->watches);
    free(bus->timeouts);
    free(bus->deadlines);
    free(bus);
fail_connection:
    dbus_connection_close(connection);
    dbus_connection_unref(connection);
    if (error_out && !*error_out)
        *error_out = strdup("out of memory setting up the bus connection");
    return NULL;
}

const char *cbz_bus_unique_name(cbz_bus *bus)
{
    return dbus_bus_get_unique_name(bus->connection);
}

static int enqueue(cbz_bus *bus, DBusMessage *message, int timeout_ms, cbz_reply_callback on_reply, void *context)
{
    job *work = calloc(1, sizeof *work);
    if (!work)
        return -1;
    work->message = dbus_message_ref(message);
    work->timeout_ms = timeout_ms;
    work->on_reply = on_reply;
    work->context = context;
    pthread_mutex_lock(&bus->lock);
    /* Checked under the lock that cbz_bus_close sets it under: a job is either refused
     * here or queued before close collects the queue, never lost in between. */
    if (atomic_load(&bus->stopping)) {
        pthread_mutex_unlock(&bus->lock);
        dbus_message_unref(work->message);
        free(work);
        return -1;
    }
    if (bus->queue_tail)
        bus->queue_tail->next = work;
    else
        bus->queue_head = work;
    bus->queue_tail = work;
    pthread_mutex_unlock(&bus->lock);
    wake(bus);
    return 0;
}

int cbz_bus_call(cbz_bus *bus, DBusMessage *message, int timeout_ms, cbz_reply_callback on_reply, void *context)
{
    if (!on_reply)
        return -1;
    return enqueue(bus, message, timeout_ms, on_reply, context);
}

int cbz_bus_send(cbz_bus *bus, DBusMessage *message)
{
    return enqueue(bus, message, 0, NULL, NULL);
}

int cbz_bus_is_connected(cbz_bus *bus)
{
    return !atomic_load(&bus->stopping) && atomic_load(&bus->connected) &&
           dbus_connection_get_is_connected(bus->connection);
}

void cbz_bus_close(cbz_bus *bus)
{
    if (!bus)
        return;
    pthread_mutex_lock(&bus->lock);
    int already = atomic_exchange(&bus->stopping, 1);
    pthread_mutex_unlock(&bus->lock);
    if (already)
        return;
    wake(bus);
    pthread_join(bus->thread, NULL);
    /* Calls queued but never sent, and calls sent but not answered, are answered now with
     * NULL (the Swift side reports `disconnected`). */
    finish_jobs(take_jobs(bus), 0, bus);
    while (bus->outstanding) {
        reply_box *box = bus->outstanding;
        DBusPendingCall *pending = box->pending;
        cbz_reply_callback on_reply = box->on_reply;
        void *context = box->context;
        unlink_box(bus, box);
        dbus_pending_call_cancel(pending);
        on_reply(context, NULL);
        dbus_pending_call_unref(pending); /* frees box through the notify's free function */
    }
    dbus_connection_flush(bus->connection);
    dbus_connection_remove_filter(bus->connection, filter, bus);
    dbus_connection_close(bus->connection);
    while (dbus_connection_dispatch(bus->connection) == DBUS_DISPATCH_DATA_REMAINS) {
    }
    dbus_connection_set_watch_functions(bus->connection, NULL, NULL, NULL, NULL, NULL);
    dbus_connection_set_timeout_functions(bus->connection, NULL, NULL, NULL, NULL, NULL);
}

void cbz_bus_free(cbz_bus *bus)
{
    if (!bus)
        return;
    cbz_bus_close(bus);
    dbus_connection_unref(bus->connection);
    close(bus->wake_fd);
    pthread_mutex_destroy(&bus->lock);
    free(bus->watches);
    free(bus->timeouts);
    free(bus->deadlines);
    free(bus);
}
