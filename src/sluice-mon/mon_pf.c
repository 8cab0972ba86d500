/* A port-forward connect is never a blocking connect(): a pod whose
 * listener does not accept (full backlog) would stall every session of
 * the monitor until the kernel gave up (minutes). Instead the socket
 * connects in the background, watched for writability, with a timer. */
#include "mon_pf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct pf_dial {
    mon *m;
    sl_pfconn *conn;
    uint16_t port;
    uint32_t timeout_ms;
    int family; /* AF_INET first, then AF_INET6 */
    int fd;
    sl_mwatch *w;
    sl_mtimer *timer;
    char err4[160]; /* why IPv4 failed */
} pf_dial;

static void dial_free(pf_dial *d)
{
    sl_mwatch_free(d->w);
    sl_mtimer_cancel(d->timer);
    if (d->fd >= 0)
        close(d->fd);
    sl_pfconn_set_data(d->conn, NULL);
    free(d);
}

static void fail(pf_dial *d, const char *why)
{
    char msg[512];
    snprintf(msg, sizeof(msg), "failed to connect to localhost:%u: %s", d->port, why);
    sl_pfconn *conn = d->conn;
    dial_free(d);
    sl_pfconn_failed(conn, msg);
}

static void connected(pf_dial *d)
{
    int one = 1, fd = d->fd;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    d->fd = -1;
    sl_pfconn *conn = d->conn;
    dial_free(d); /* the watch goes before the library polls the same fd */
    sl_pfconn_connected(conn, fd);
}

static void try_next(pf_dial *d, int err);

static void writable_cb(sl_mwatch *w, uint32_t events, void *data)
{
    (void)w, (void)events;
    pf_dial *d = data;
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(d->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        err = errno;
    if (err == 0) {
        connected(d);
        return;
    }
    try_next(d, err);
}

/* Starts connecting on d->family. Returns 0 (connected or in progress) or
 * an errno. */
static int dial(pf_dial *d)
{
    struct sockaddr_storage ss = {0};
    socklen_t len;
    if (d->family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        *a = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons(d->port)};
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        len = sizeof(*a);
    } else {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        *a = (struct sockaddr_in6){.sin6_family = AF_INET6, .sin6_port = htons(d->port)};
        a->sin6_addr = in6addr_loopback;
        len = sizeof(*a);
    }
    d->fd = socket(d->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (d->fd < 0)
        return errno;
    if (connect(d->fd, (struct sockaddr *)&ss, len) == 0)
        return 0;
    if (errno != EINPROGRESS)
        return errno;
    d->w = sl_mloop_watch(d->m->loop, d->fd, EPOLLOUT, writable_cb, d);
    return d->w ? 0 : errno;
}

static void start(pf_dial *d)
{
    int err = dial(d);
    if (err)
        try_next(d, err);
    else if (!d->w)
        connected(d);
}

static void try_next(pf_dial *d, int err)
{
    sl_mwatch_free(d->w);
    d->w = NULL;
    if (d->fd >= 0)
        close(d->fd);
    d->fd = -1;
    if (d->family == AF_INET) {
        snprintf(d->err4, sizeof(d->err4), "%s", strerror(err));
        d->family = AF_INET6;
        start(d);
        return;
    }
    char why[400];
    snprintf(why, sizeof(why), "IPv4: %s; IPv6: %s", d->err4, strerror(err));
    fail(d, why);
}

static void timeout_cb(void *data)
{
    pf_dial *d = data;
    d->timer = NULL;
    char why[128];
    snprintf(why, sizeof(why), "no answer within %u ms", d->timeout_ms);
    fail(d, why);
}

void mon_pf_connect(mon *m, sl_pfconn *conn, uint16_t port, uint32_t timeout_ms)
{
    pf_dial *d = calloc(1, sizeof(*d));
    if (!d) {
        sl_pfconn_failed(conn, "out of memory");
        return;
    }
    *d = (pf_dial){
        .m = m, .conn = conn, .port = port, .timeout_ms = timeout_ms, .family = AF_INET, .fd = -1};
    sl_pfconn_set_data(conn, d);
    d->timer = sl_mloop_timer(m->loop, timeout_ms, timeout_cb, d);
    if (!d->timer) {
        fail(d, "out of memory");
        return;
    }
    start(d);
}

void mon_pf_cancel(sl_pfconn *conn)
{
    pf_dial *d = sl_pfconn_data(conn);
    if (!d)
        return;
    dial_free(d);
    sl_pfconn_failed(conn, "cancelled"); /* the answer releases the handle */
}
