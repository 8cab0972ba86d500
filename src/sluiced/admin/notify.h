/* systemd's readiness protocol (sd_notify(3), Type=notify): "READY=1",
 * "RELOADING=1", "STOPPING=1", "STATUS=..." sent as one datagram to the
 * unix socket $NOTIFY_SOCKET names ('@' for the abstract namespace).
 *
 * The variable is taken out of the environment at start: every process
 * sluiced starts (sluice-mon, and through it runc) would inherit it, and
 * runc reads NOTIFY_SOCKET as a request to proxy a container's own
 * notifications, waiting for them at start. libsystemd's sd_notify reads
 * the variable at each call, so sluiced keeps the address itself. */
#ifndef SL_NOTIFY_H
#define SL_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

typedef struct sl_notify {
    struct sockaddr_un addr;
    socklen_t len; /* 0: no NOTIFY_SOCKET, nothing is sent */
} sl_notify;

/* Reads $NOTIFY_SOCKET into n and removes it from the environment. Call
 * before any thread starts. A value that is not an absolute path or an
 * '@' name that fits a unix socket address leaves n off; returns false
 * then (true when unset or kept). */
bool sl_notify_init(sl_notify *n);
/* The address parsing alone, for tests: value into n (off when bad). */
bool sl_notify_parse(sl_notify *n, const char *value);
/* Sends state ("READY=1\nSTATUS=...") if n is on; returns 0, or -1 with
 * errno. Never blocks. */
int sl_notify_send(const sl_notify *n, const char *state);

#endif
