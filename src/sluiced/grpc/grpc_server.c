/* libuv layer of the gRPC server: unix listener, one sl_grpc_conn per
 * accepted connection, reads, writes with back-pressure, deadline timer. */
#include "grpc/grpc_server.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "sluice/error.h"

#define WRITE_IOVS 16

typedef struct gconn gconn;

struct sl_grpc_server {
    uv_loop_t *loop;
    sl_grpc_config cfg;
    uv_pipe_t listener;
    bool listening;
    char *path; /* socket file, removed at close */
    gconn *conns;
    size_t nconns;
    bool closing;
    bool listener_closed;
    void (*close_cb)(sl_grpc_server *s, void *arg);
    void *close_arg;
};

struct gconn {
    sl_grpc_server *srv;
    gconn *prev, *next;
    uv_pipe_t pipe;
    uv_timer_t timer; /* call deadlines; the cut-off at shutdown */
    uv_idle_t idle;   /* output from a handler that answered later */
    sl_grpc_conn *core;
    sl_grpc_conn_io io;
    sl_bufq out;
    uv_write_t wreq;
    size_t inflight; /* bytes handed to uv_write */
    bool reading;
    bool failed; /* protocol error: send what is queued, then close */
    bool closing;
    int open_handles;
    char rbuf[SL_GRPC_READ_CHUNK];
};

static void conn_close(gconn *g);
static void pump(gconn *g);

static uint64_t io_now(void *data)
{
    gconn *g = data;
    return uv_now(g->srv->loop);
}

static void idle_cb(uv_idle_t *h)
{
    gconn *g = h->data;
    uv_idle_stop(h);
    pump(g);
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
        conn_close(g);
        return;
    }
    pump(g);
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
        conn_close(g);
    }
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)hint;
    gconn *g = h->data;
    *buf = uv_buf_init(g->rbuf, sizeof(g->rbuf));
}

static void read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    gconn *g = st->data;
    if (n < 0) {
        conn_close(g); /* EOF or error: the peer is gone */
        return;
    }
    if (n > 0 && sl_grpc_conn_recv(g->core, (const uint8_t *)buf->base, (size_t)n) < 0)
        g->failed = true;
    pump(g);
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
    if (g->srv->closing) {
        conn_close(g); /* did not drain in time */
        return;
    }
    sl_grpc_conn_expire(g->core, uv_now(g->srv->loop));
    pump(g);
}

static void arm_deadline(gconn *g)
{
    if (g->srv->closing)
        return; /* the shutdown cut-off owns the timer */
    uint64_t next = sl_grpc_conn_next_deadline(g->core);
    if (next == UINT64_MAX) {
        uv_timer_stop(&g->timer);
        return;
    }
    uint64_t t = uv_now(g->srv->loop);
    uv_timer_start(&g->timer, timer_cb, next > t ? next - t : 0, 0);
}

/* Moves output from the session to the socket and decides about reading
 * and closing. Never called from inside the session. */
static void pump(gconn *g)
{
    if (g->closing)
        return;
    if (sl_grpc_conn_send(g->core, &g->out, SL_GRPC_OUTPUT_HIGH_WATER) < 0)
        g->failed = true;
    start_write(g);
    bool want_read = !g->failed && sl_grpc_conn_want_read(g->core);
    bool more = !g->failed && sl_grpc_conn_want_write(g->core);
    if (!want_read && !more && sl_bufq_len(&g->out) == 0) {
        conn_close(g);
        return;
    }
    set_reading(g, want_read && sl_bufq_len(&g->out) < SL_GRPC_OUTPUT_HIGH_WATER);
    arm_deadline(g);
}

static void server_maybe_done(sl_grpc_server *s)
{
    if (s->closing && s->listener_closed && !s->conns && s->close_cb)
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

static void conn_close(gconn *g)
{
    if (g->closing)
        return;
    g->closing = true;
    /* Free the session first: handlers that answer later then find their
     * call detached instead of waking a closing handle. */
    sl_grpc_conn_free(g->core);
    g->core = NULL;
    g->open_handles = 3;
    uv_close((uv_handle_t *)&g->pipe, handle_closed);
    uv_close((uv_handle_t *)&g->timer, handle_closed);
    uv_close((uv_handle_t *)&g->idle, handle_closed);
}

static void reject_closed(uv_handle_t *h)
{
    free(h);
}

/* Accepts and closes at once: the connection limit is reached. */
static void reject(sl_grpc_server *s)
{
    uv_pipe_t *p = malloc(sizeof(*p));
    if (!p)
        return;
    uv_pipe_init(s->loop, p, 0);
    uv_accept((uv_stream_t *)&s->listener, (uv_stream_t *)p);
    uv_close((uv_handle_t *)p, reject_closed);
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
    if (s->nconns >= s->cfg.max_connections) {
        reject(s);
        return;
    }
    gconn *g = conn_new(s);
    if (!g) {
        reject(s);
        return;
    }
    if (uv_accept(l, (uv_stream_t *)&g->pipe) < 0) {
        conn_close(g);
        return;
    }
    pump(g); /* our SETTINGS, and start reading */
}

int sl_grpc_server_new(uv_loop_t *loop, const sl_grpc_config *cfg, sl_grpc_server **out)
{
    sl_grpc_server *s = calloc(1, sizeof(*s));
    if (!s)
        return SL_ERR_NOMEM;
    s->loop = loop;
    s->cfg = *cfg;
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

static void listener_closed(uv_handle_t *h)
{
    sl_grpc_server *s = h->data;
    s->listener_closed = true;
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
    for (gconn *g = s->conns, *next; g; g = next) {
        next = g->next;
        if (g->closing)
            continue;
        sl_grpc_conn_shutdown(g->core);
        uv_timer_start(&g->timer, timer_cb, SL_GRPC_SHUTDOWN_TIMEOUT_MS, 0);
        pump(g); /* may close g */
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
