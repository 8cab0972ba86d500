/* libuv layer of the gRPC server: unix listener, one sl_grpc_conn per
 * accepted connection, reads, writes with back-pressure, deadline timer.
 * The connection limit and the idle timeout are in grpc_limits.c. */
#include "grpc/grpc_server.h"

#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "sl_log.h"

#include "grpc/grpc_server_impl.h"
#include "sl_log.h"
#include "sluice/error.h"

#define WRITE_IOVS 16
/* At most this many bytes are read and dropped before a close. */
#define DRAIN_MAX (256u * 1024)

static uint64_t io_now(void *data)
{
    gconn *g = data;
    return uv_now(g->srv->loop);
}

static void idle_cb(uv_idle_t *h)
{
    gconn *g = h->data;
    uv_idle_stop(h);
    sl_gconn_pump(g);
}

static void io_wake(void *data)
{
    gconn *g = data;
    if (!g->closing)
        uv_idle_start(&g->idle, idle_cb);
}

static void write_cb(uv_write_t *req, int status)
{
    gconn *g = req->data;
    sl_bufq_consume(&g->out, g->inflight);
    g->inflight = 0;
    if (g->closing)
        return;
    if (status < 0) {
        sl_gconn_close(g);
        return;
    }
    sl_gsrv_touch(g);
    sl_gconn_pump(g);
}

static void start_write(gconn *g)
{
    struct iovec iov[WRITE_IOVS];
    uv_buf_t bufs[WRITE_IOVS];
    if (g->inflight || sl_bufq_len(&g->out) == 0)
        return;
    int n = sl_bufq_peek(&g->out, iov, WRITE_IOVS);
    for (int i = 0; i < n; i++) {
        bufs[i] = uv_buf_init(iov[i].iov_base, (unsigned)iov[i].iov_len);
        g->inflight += iov[i].iov_len;
    }
    g->wreq.data = g;
    if (uv_write(&g->wreq, (uv_stream_t *)&g->pipe, bufs, (unsigned)n, write_cb) < 0) {
        g->inflight = 0;
        sl_gconn_close(g);
    }
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)hint;
    gconn *g = h->data;
    *buf = uv_buf_init(g->srv->rbuf, sizeof(g->srv->rbuf));
}

static void read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    gconn *g = st->data;
    if (n < 0) {
        sl_gconn_close(g); /* EOF or error: the peer is gone */
        return;
    }
    if (g->shut)
        return; /* lingering after our GOAWAY: input is dropped */
    if (n > 0) {
        sl_gsrv_touch(g);
        if (sl_grpc_conn_recv(g->core, (const uint8_t *)buf->base, (size_t)n) < 0)
            g->failed = true;
    }
    sl_gconn_pump(g);
}

static void set_reading(gconn *g, bool on)
{
    if (on == g->reading)
        return;
    g->reading = on;
    if (on)
        uv_read_start((uv_stream_t *)&g->pipe, alloc_cb, read_cb);
    else
        uv_read_stop((uv_stream_t *)&g->pipe);
}

static void timer_cb(uv_timer_t *t)
{
    gconn *g = t->data;
    if (g->srv->closing || g->goaway) {
        /* Did not take its GOAWAY in time: a peer that stopped reading, or
         * one still busy with a call we had to cancel. */
        char ms[16];
        snprintf(ms, sizeof(ms), "%u", SL_GRPC_SHUTDOWN_TIMEOUT_MS);
        sl_log(SL_LOG_INFO, "cut a CRI connection that did not close after our GOAWAY", "after_ms",
               ms, NULL);
        sl_gconn_close(g);
        return;
    }
    sl_grpc_conn_expire(g->core, uv_now(g->srv->loop));
    sl_gconn_pump(g);
}

static void arm_deadline(gconn *g)
{
    if (g->srv->closing || g->goaway)
        return; /* the cut-off owns the timer */
    uint64_t next = sl_grpc_conn_next_deadline(g->core);
    if (next == UINT64_MAX) {
        uv_timer_stop(&g->timer);
        return;
    }
    uint64_t t = uv_now(g->srv->loop);
    uv_timer_start(&g->timer, timer_cb, next > t ? next - t : 0, 0);
}

/* Reads and drops what the peer already sent: closing a unix socket with
 * unread bytes makes the peer's next read fail with ECONNRESET. */
static void drain_input(sl_grpc_server *s, uv_stream_t *st)
{
    uv_os_fd_t fd;
    if (uv_fileno((uv_handle_t *)st, &fd) < 0)
        return;
    for (size_t total = 0; total < DRAIN_MAX;) {
        ssize_t n = recv(fd, s->rbuf, sizeof(s->rbuf), MSG_DONTWAIT);
        if (n <= 0)
            return;
        total += (size_t)n;
    }
}

/* Our side is shut and everything before it written. At the server's own
 * shutdown a peer that holds an idle connection without reading (a pooled
 * synchronous client) would keep the process up for the whole cut-off, so
 * the connection is closed now, after dropping what the peer sent: closing
 * with unread bytes would reset its read of our GOAWAY. */
static void shutdown_cb(uv_shutdown_t *req, int status)
{
    (void)status;
    gconn *g = req->handle->data;
    if (g->closing || !g->srv->closing)
        return;
    drain_input(g->srv, (uv_stream_t *)&g->pipe);
    sl_gconn_close(g);
}

/* Our GOAWAY is out: shut our side, wait for the peer's EOF. */
static void linger(gconn *g)
{
    g->shut = true;
    if (uv_shutdown(&g->sreq, (uv_stream_t *)&g->pipe, shutdown_cb) < 0) {
        sl_gconn_close(g);
        return;
    }
    set_reading(g, true);
}

/* Moves output from the session to the socket and decides about reading
 * and closing. Never called from inside the session. */
void sl_gconn_pump(gconn *g)
{
    if (g->closing || g->shut)
        return;
    if (sl_grpc_conn_send(g->core, &g->out, SL_GRPC_OUTPUT_HIGH_WATER) < 0)
        g->failed = true;
    start_write(g);
    bool want_read = !g->failed && sl_grpc_conn_want_read(g->core);
    bool more = !g->failed && sl_grpc_conn_want_write(g->core);
    if ((!want_read || g->goaway) && !more && sl_bufq_len(&g->out) == 0) {
        if (g->goaway)
            linger(g);
        else
            sl_gconn_close(g);
        return;
    }
    set_reading(g, want_read && sl_bufq_len(&g->out) < SL_GRPC_OUTPUT_HIGH_WATER);
    arm_deadline(g);
}

static void server_maybe_done(sl_grpc_server *s)
{
    if (s->closing && s->listener_closed && s->idle_timer_closed && !s->conns && !s->lingering &&
        s->close_cb)
        s->close_cb(s, s->close_arg);
}

static void handle_closed(uv_handle_t *h)
{
    gconn *g = h->data;
    if (--g->open_handles > 0)
        return;
    sl_grpc_server *s = g->srv;
    if (g->prev)
        g->prev->next = g->next;
    else
        s->conns = g->next;
    if (g->next)
        g->next->prev = g->prev;
    s->nconns--;
    sl_bufq_fini(&g->out);
    free(g);
    server_maybe_done(s);
}

void sl_gconn_close(gconn *g)
{
    if (g->closing)
        return;
    g->closing = true;
    if (g->goaway)
        g->srv->ngoaway--;
    sl_gsrv_lru_remove(g);
    /* Free the session first: handlers that answer later then find their
     * call detached instead of waking a closing handle. */
    sl_grpc_conn_free(g->core);
    g->core = NULL;
    g->open_handles = 3;
    uv_close((uv_handle_t *)&g->pipe, handle_closed);
    uv_close((uv_handle_t *)&g->timer, handle_closed);
    uv_close((uv_handle_t *)&g->idle, handle_closed);
}

void sl_gconn_goaway(gconn *g, uint32_t error_code, const char *debug)
{
    if (g->closing || g->goaway)
        return;
    sl_gsrv_lru_remove(g);
    g->goaway = true;
    g->srv->ngoaway++;
    if (sl_grpc_conn_goaway(g->core, error_code, debug) < 0) {
        sl_gconn_close(g);
        return;
    }
    uv_timer_start(&g->timer, timer_cb, SL_GRPC_SHUTDOWN_TIMEOUT_MS, 0);
    sl_gconn_pump(g);
}

/* Writes what the session has queued (our SETTINGS, a GOAWAY) if the
 * socket takes it at once (uv_try_write refuses while an earlier write is
 * not fully written). */
static void write_now(sl_grpc_conn *core, uv_stream_t *st)
{
    sl_bufq q;
    struct iovec iov[WRITE_IOVS];
    uv_buf_t bufs[WRITE_IOVS];
    sl_bufq_init(&q);
    if (sl_grpc_conn_send(core, &q, SL_GRPC_OUTPUT_HIGH_WATER) == SL_OK) {
        int n = sl_bufq_peek(&q, iov, WRITE_IOVS);
        for (int i = 0; i < n; i++)
            bufs[i] = uv_buf_init(iov[i].iov_base, (unsigned)iov[i].iov_len);
        if (n > 0)
            uv_try_write(st, bufs, (unsigned)n);
    }
    sl_bufq_fini(&q);
}

void sl_gconn_evict(gconn *g, const char *debug)
{
    if (g->closing)
        return;
    /* Queued bytes not yet handed to uv_write would come before the GOAWAY:
     * then just close. Bytes handed over but not yet written make
     * uv_try_write refuse (those already written are in order). */
    if (sl_bufq_len(&g->out) == g->inflight &&
        sl_grpc_conn_goaway(g->core, NGHTTP2_NO_ERROR, debug) == SL_OK)
        write_now(g->core, (uv_stream_t *)&g->pipe);
    drain_input(g->srv, (uv_stream_t *)&g->pipe);
    sl_gconn_close(g);
}

static uint64_t no_clock(void *data)
{
    (void)data;
    return 0;
}

/* A refused connection's session only writes. */
static const sl_grpc_conn_io refused_io = {.now = no_clock};

struct refused {
    sl_grpc_server *srv;
    refused *prev, *next; /* srv->lingering */
    uv_pipe_t pipe;
    uv_timer_t timer;
    uv_shutdown_t sreq;
    int open_handles;
    bool closing;
};

static void refused_closed(uv_handle_t *h)
{
    refused *r = h->data;
    if (--r->open_handles > 0)
        return;
    sl_grpc_server *s = r->srv;
    if (r->prev)
        r->prev->next = r->next;
    else
        s->lingering = r->next;
    if (r->next)
        r->next->prev = r->prev;
    s->nlingering--;
    free(r);
    server_maybe_done(s);
}

static void refused_close(refused *r)
{
    if (r->closing)
        return;
    r->closing = true;
    r->open_handles = 2;
    uv_close((uv_handle_t *)&r->pipe, refused_closed);
    uv_close((uv_handle_t *)&r->timer, refused_closed);
}

static void refused_timer_cb(uv_timer_t *t)
{
    refused_close(t->data);
}

static void refused_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)hint;
    refused *r = h->data;
    *buf = uv_buf_init(r->srv->rbuf, sizeof(r->srv->rbuf));
}

static void refused_read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    (void)buf;
    if (n < 0) /* the peer closed: it has read what we sent */
        refused_close(st->data);
}

static void refused_shutdown_cb(uv_shutdown_t *req, int status)
{
    (void)req;
    (void)status;
}

static void log_refusal(sl_grpc_server *s)
{
    uint64_t now = uv_now(s->loop);
    if (s->refusal_logged && now - s->refusal_logged < SL_GRPC_REFUSAL_LOG_MS)
        return;
    s->refusal_logged = now;
    char nopen[24], max[16], nrefused[24];
    snprintf(nopen, sizeof(nopen), "%zu", s->nopen);
    snprintf(max, sizeof(max), "%u", s->cfg.max_connections);
    snprintf(nrefused, sizeof(nrefused), "%zu", s->stats.refused);
    sl_log(SL_LOG_WARN, "CRI connection refused: every open connection has a call in progress",
           "open", nopen, "max_grpc_connections", max, "refused_total", nrefused, NULL);
}

/* Our SETTINGS and GOAWAY(REFUSED_STREAM) saying why, written at once. */
static void write_refusal(sl_grpc_server *s, uv_stream_t *st)
{
    char why[160];
    sl_grpc_conn *core = NULL;
    if (sl_grpc_conn_new(&s->cfg, &refused_io, &core) < 0)
        return;
    snprintf(why, sizeof(why),
             "sluiced: %zu connections open (the limit), each with a call in progress", s->nopen);
    if (sl_grpc_conn_goaway(core, NGHTTP2_REFUSED_STREAM, why) == SL_OK)
        write_now(core, st);
    sl_grpc_conn_free(core);
}

/* Accepts the pending connection only to tell it why it cannot stay, then
 * lets it linger until its peer closes (see SL_GRPC_REFUSED_LINGER_MS). */
static void refuse(sl_grpc_server *s)
{
    refused *r = calloc(1, sizeof(*r));
    if (!r)
        return;
    r->srv = s;
    uv_pipe_init(s->loop, &r->pipe, 0);
    uv_timer_init(s->loop, &r->timer);
    r->pipe.data = r->timer.data = r->sreq.data = r;
    r->next = s->lingering;
    if (s->lingering)
        s->lingering->prev = r;
    s->lingering = r;
    s->nlingering++;
    s->stats.refused++;
    log_refusal(s);
    uv_stream_t *st = (uv_stream_t *)&r->pipe;
    if (uv_accept((uv_stream_t *)&s->listener, st) < 0) {
        refused_close(r);
        return;
    }
    write_refusal(s, st);
    if (s->nlingering > SL_GRPC_MAX_LINGERING || s->closing ||
        uv_shutdown(&r->sreq, st, refused_shutdown_cb) < 0 ||
        uv_read_start(st, refused_alloc_cb, refused_read_cb) < 0) {
        drain_input(s, st);
        refused_close(r);
        return;
    }
    uv_timer_start(&r->timer, refused_timer_cb, SL_GRPC_REFUSED_LINGER_MS, 0);
}

static gconn *conn_new(sl_grpc_server *s)
{
    gconn *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->srv = s;
    g->io = (sl_grpc_conn_io){.now = io_now, .wake = io_wake, .data = g};
    if (sl_grpc_conn_new(&s->cfg, &g->io, &g->core) < 0) {
        free(g);
        return NULL;
    }
    sl_bufq_init(&g->out);
    uv_pipe_init(s->loop, &g->pipe, 0);
    uv_timer_init(s->loop, &g->timer);
    uv_idle_init(s->loop, &g->idle);
    g->pipe.data = g->timer.data = g->idle.data = g;
    g->next = s->conns;
    if (s->conns)
        s->conns->prev = g;
    s->conns = g;
    s->nconns++;
    return g;
}

static void accept_cb(uv_stream_t *l, int status)
{
    sl_grpc_server *s = l->data;
    if (status < 0 || s->closing)
        return;
    if (!sl_gsrv_make_room(s)) {
        refuse(s);
        return;
    }
    gconn *g = conn_new(s);
    if (!g) {
        refuse(s);
        return;
    }
    if (uv_accept(l, (uv_stream_t *)&g->pipe) < 0) {
        sl_gconn_close(g);
        return;
    }
    sl_gsrv_lru_add(g);
    sl_gconn_pump(g); /* our SETTINGS, and start reading */
}

int sl_grpc_server_new(uv_loop_t *loop, const sl_grpc_config *cfg, sl_grpc_server **out)
{
    sl_grpc_server *s = calloc(1, sizeof(*s));
    if (!s)
        return SL_ERR_NOMEM;
    s->loop = loop;
    s->cfg = *cfg;
    s->cfg.max_connections = sl_gsrv_fd_bound(cfg->max_connections);
    sl_gsrv_limits_init(s);
    *out = s;
    return SL_OK;
}

/* Removes a socket file left by an earlier run; refuses anything else. */
static int remove_stale(const char *path, sl_error *e)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : sl_error_set(e, errno, "stat %s", path);
    if (!S_ISSOCK(st.st_mode))
        return sl_error_set(e, 0, "%s exists and is not a socket", path);
    if (unlink(path) < 0)
        return sl_error_set(e, errno, "remove stale socket %s", path);
    return 0;
}

static int bind_listen(sl_grpc_server *s, const char *path, unsigned mode, sl_error *e)
{
    int rc = uv_pipe_bind(&s->listener, path);
    if (rc < 0)
        return sl_error_set(e, -rc, "bind %s", path);
    if (chmod(path, (mode_t)mode) < 0)
        return sl_error_set(e, errno, "chmod %s", path);
    rc = uv_listen((uv_stream_t *)&s->listener, SL_GRPC_LISTEN_BACKLOG, accept_cb);
    if (rc < 0)
        return sl_error_set(e, -rc, "listen on %s", path);
    return 0;
}

int sl_grpc_server_listen(sl_grpc_server *s, const char *path, unsigned mode, sl_error *e)
{
    struct sockaddr_un sun;
    if (s->listening)
        return sl_error_set(e, EBUSY, "the gRPC server already listens");
    if (strlen(path) >= sizeof(sun.sun_path))
        return sl_error_set(e, ENAMETOOLONG, "socket path %s", path);
    if (remove_stale(path, e) < 0)
        return -1;
    s->path = strdup(path);
    if (!s->path)
        return sl_error_set(e, ENOMEM, "socket path");
    uv_pipe_init(s->loop, &s->listener, 0);
    s->listener.data = s;
    s->listening = true;
    if (bind_listen(s, path, mode, e) < 0) {
        unlink(path);
        return -1;
    }
    return 0;
}

size_t sl_grpc_server_connections(const sl_grpc_server *s)
{
    return s->nconns;
}

uint32_t sl_grpc_server_max_connections(const sl_grpc_server *s)
{
    return s->cfg.max_connections;
}

void sl_grpc_server_get_stats(const sl_grpc_server *s, sl_grpc_server_stats *out)
{
    *out = s->stats;
    out->connections = s->nconns;
    out->open = s->nopen;
}

static void listener_closed(uv_handle_t *h)
{
    sl_grpc_server *s = h->data;
    s->listener_closed = true;
    server_maybe_done(s);
}

static void idle_timer_closed(uv_handle_t *h)
{
    sl_grpc_server *s = h->data;
    s->idle_timer_closed = true;
    server_maybe_done(s);
}

void sl_grpc_server_close(sl_grpc_server *s, void (*cb)(sl_grpc_server *s, void *arg), void *arg)
{
    if (s->closing)
        return;
    s->closing = true;
    s->close_cb = cb;
    s->close_arg = arg;
    if (s->path)
        unlink(s->path);
    sl_gsrv_limits_close(s, idle_timer_closed);
    for (refused *r = s->lingering; r; r = r->next)
        refused_close(r);
    for (gconn *g = s->conns, *next; g; g = next) {
        next = g->next;
        if (g->closing)
            continue;
        /* Not nghttp2's terminate: that stops the session once the GOAWAY
         * is out, and trailers queued behind a deferred body (a stream's
         * last answer, e.g. an event subscription ended just before) were
         * lost. The connection ends once nothing is left to send, or at
         * SL_GRPC_SHUTDOWN_TIMEOUT_MS. */
        sl_gconn_goaway(g, NGHTTP2_NO_ERROR, "the server is shutting down"); /* may close g */
    }
    if (s->listening) {
        uv_close((uv_handle_t *)&s->listener, listener_closed);
    } else {
        s->listener_closed = true;
        server_maybe_done(s);
    }
}

void sl_grpc_server_free(sl_grpc_server *s)
{
    if (!s)
        return;
    free(s->path);
    free(s);
}
