/* sl_client_exec: binds a connection (cconn), the remote-command core
 * (crc) and the local fds (fdio) on the caller's loop.
 *
 * Back-pressure: output bytes queue per local fd; above the high-water
 * mark their flow-control credit is withheld (a flow-control peer stops
 * on that stream only) and the socket is not read until the fd drains
 * (one process: holding its other streams back costs nothing). stdin is
 * read only while the stream and the socket queues are below the mark. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cconn.h"
#include "client/crc.h"
#include "client/fdio.h"
#include "util/abi.h"
#include "sluice/client.h"

#define NFD 3
#define MSG_MAX 600

typedef struct xfd {
    struct sl_client_exec *x;
    sl_fdio *io;
    int fd;
} xfd;

struct sl_client_exec {
    uv_loop_t *loop;
    sl_client_exec_cb cb;
    void *arg;
    char *url;
    sl_client_header *hdrs;
    size_t nhdrs;
    sl_transport transport;
    bool tty;
    int fd[NFD]; /* by channel: stdin, stdout, stderr */
    uint16_t width, height;
    bool size_pending;
    uint32_t timeout_ms, high_water, spdy_window;
    sl_upgrade up;
    sl_cconn *conn;
    sl_crc *crc;
    sl_bufq out;
    xfd fds[NFD];
    int nfds;
    xfd *by_ch[NFD];
    size_t held[NFD]; /* output credit withheld per channel */
    uv_timer_t ping, notify;
    uint64_t last_pong;
    int handles;
    bool ended, notify_started, freed;
    bool exited;
    int exit_code;
    sl_client_err_kind kind;
    int http_status;
    char message[MSG_MAX];
};

static void pump(sl_client_exec *x);
static void maybe_notify(sl_client_exec *x);

/* ---- the end ------------------------------------------------------------------ */

static void notify_cb(uv_timer_t *t)
{
    sl_client_exec *x = t->data;
    if (x->freed)
        return;
    if (x->exited) {
        if (x->cb.on_exit)
            x->cb.on_exit(x->arg, x->exit_code, x->exit_code ? x->message : NULL);
        return;
    }
    sl_client_error e = {sizeof(e), x->kind, x->http_status, x->message};
    if (x->cb.on_error)
        x->cb.on_error(x->arg, &e); /* the last thing: it may free x */
}

static bool outputs_drained(const sl_client_exec *x)
{
    for (int ch = SL_CRC_STDOUT; ch <= SL_CRC_STDERR; ch++) {
        const xfd *f = x->by_ch[ch];
        if (f && sl_fdio_queued(f->io) > 0 && !sl_fdio_failed(f->io))
            return false;
    }
    return true;
}

/* Fires the user's callback once every output byte reached its fd. */
static void maybe_notify(sl_client_exec *x)
{
    if (!x->ended || x->notify_started || x->freed || !outputs_drained(x))
        return;
    x->notify_started = true;
    uv_timer_start(&x->notify, notify_cb, 0, 0);
}

/* Stops talking to the server: what is queued leaves, then the close. */
static void end_session(sl_client_exec *x)
{
    x->ended = true;
    uv_timer_stop(&x->ping);
    if (x->by_ch[SL_CRC_STDIN])
        sl_fdio_read_pause(x->by_ch[SL_CRC_STDIN]->io, true);
    if (x->crc)
        sl_crc_close(x->crc);
    if (x->conn) {
        sl_cconn_send(x->conn, &x->out);
        sl_cconn_finish(x->conn);
        x->conn = NULL;
    }
    maybe_notify(x);
}

static void fail(sl_client_exec *x, sl_client_err_kind kind, const char *msg)
{
    if (x->ended)
        return;
    x->exited = false;
    x->kind = kind;
    snprintf(x->message, sizeof(x->message), "%s", msg);
    end_session(x);
}

/* ---- crc callbacks --------------------------------------------------------------- */

static void update_socket(sl_client_exec *x)
{
    if (!x->conn)
        return;
    bool over = false;
    for (int ch = SL_CRC_STDOUT; ch <= SL_CRC_STDERR; ch++)
        if (x->by_ch[ch] && sl_fdio_queued(x->by_ch[ch]->io) > x->high_water)
            over = true;
    if (sl_cconn_paused(x->conn) && !over)
        x->last_pong = uv_now(x->loop); /* pongs could not be read meanwhile */
    sl_cconn_pause(x->conn, over);
}

static void on_output(void *arg, int ch, const uint8_t *data, size_t len)
{
    sl_client_exec *x = arg;
    xfd *f = x->by_ch[ch];
    if (!f || sl_fdio_write(f->io, data, len) != SL_OK) {
        sl_crc_consumed(x->crc, ch, len); /* nowhere to go: keep the window open */
        return;
    }
    if (sl_fdio_queued(f->io) <= x->high_water)
        sl_crc_consumed(x->crc, ch, len);
    else
        x->held[ch] += len;
    update_socket(x);
}

static void on_stdin_closed(void *arg)
{
    sl_client_exec *x = arg;
    if (x->by_ch[SL_CRC_STDIN])
        sl_fdio_read_pause(x->by_ch[SL_CRC_STDIN]->io, true);
}

static void on_pong(void *arg)
{
    sl_client_exec *x = arg;
    x->last_pong = uv_now(x->loop);
}

static void on_end(void *arg, const sl_crc_end *e)
{
    sl_client_exec *x = arg;
    if (x->ended)
        return;
    x->exited = e->exited;
    x->exit_code = e->exit_code;
    x->kind = e->kind;
    snprintf(x->message, sizeof(x->message), "%s", e->message ? e->message : "");
    end_session(x);
}

static const sl_crc_callbacks crc_cb = {
    .on_output = on_output,
    .on_stdin_closed = on_stdin_closed,
    .on_pong = on_pong,
    .on_end = on_end,
};

/* ---- local fds ------------------------------------------------------------------ */

static void fd_read(void *arg, const uint8_t *data, size_t len)
{
    xfd *f = arg;
    sl_client_exec *x = f->x;
    if (x->ended || !x->crc)
        return;
    int rc = sl_crc_stdin(x->crc, data, len);
    if (rc == SL_ERR_NOMEM)
        fail(x, SL_CLIENT_ERR_LOCAL, "out of memory");
    pump(x);
}

static void fd_read_end(void *arg, int err)
{
    xfd *f = arg;
    sl_client_exec *x = f->x;
    (void)err; /* a read error ends stdin like EOF does */
    if (x->ended || !x->crc)
        return;
    sl_crc_stdin_eof(x->crc); /* WebSocket v4 cannot say it: the process ends it */
    pump(x);
}

static void fd_written(void *arg, size_t n)
{
    xfd *f = arg;
    sl_client_exec *x = f->x;
    (void)n;
    if (sl_fdio_queued(f->io) <= x->high_water / 2) {
        for (int ch = SL_CRC_STDOUT; ch <= SL_CRC_STDERR; ch++) {
            if (x->by_ch[ch] == f && x->held[ch] && x->crc) {
                sl_crc_consumed(x->crc, ch, x->held[ch]);
                x->held[ch] = 0;
            }
        }
    }
    update_socket(x);
    pump(x);
    maybe_notify(x);
}

static void fd_write_error(void *arg, int err)
{
    xfd *f = arg;
    sl_client_exec *x = f->x;
    char msg[128];
    snprintf(msg, sizeof(msg), "writing %s (fd %d): %s",
             f->fd == x->fd[SL_CRC_STDOUT] ? "stdout" : "stderr", f->fd, strerror(err));
    fail(x, SL_CLIENT_ERR_LOCAL, msg);
    maybe_notify(x);
}

static const sl_fdio_callbacks fd_cb = {
    .on_read = fd_read,
    .on_read_end = fd_read_end,
    .on_written = fd_written,
    .on_write_error = fd_write_error,
};

/* One fdio per distinct fd: stdin and stdout may be one socket, stdout
 * and stderr one pipe. */
static int open_fds(sl_client_exec *x)
{
    for (int ch = 0; ch < NFD; ch++) {
        int fd = x->fd[ch];
        if (fd < 0 || x->by_ch[ch])
            continue;
        xfd *f = &x->fds[x->nfds];
        f->x = x;
        f->fd = fd;
        bool rd = fd == x->fd[SL_CRC_STDIN];
        bool wr = fd == x->fd[SL_CRC_STDOUT] || fd == x->fd[SL_CRC_STDERR];
        int rc = sl_fdio_new(x->loop, fd, rd, wr, false, &fd_cb, f, &f->io);
        if (rc != SL_OK)
            return rc;
        x->nfds++;
        for (int c2 = ch; c2 < NFD; c2++)
            if (x->fd[c2] == fd)
                x->by_ch[c2] = f;
    }
    return SL_OK;
}

/* ---- connection ------------------------------------------------------------------ */

static void pump(sl_client_exec *x)
{
    if (!x->conn || !x->crc)
        return;
    size_t q = sl_cconn_queued(x->conn);
    if (q < x->high_water)
        sl_crc_flush(x->crc, x->high_water - q);
    sl_cconn_send(x->conn, &x->out);
    xfd *in = x->by_ch[SL_CRC_STDIN];
    if (in && !x->ended)
        sl_fdio_read_pause(in->io, sl_crc_stdin_pending(x->crc) > x->high_water ||
                                       sl_cconn_queued(x->conn) > x->high_water);
}

static void ping_cb(uv_timer_t *t)
{
    sl_client_exec *x = t->data;
    if (x->ended || !x->crc || !x->conn)
        return;
    if (!sl_cconn_paused(x->conn) && uv_now(x->loop) - x->last_pong > SL_CLIENT_PING_TIMEOUT_MS) {
        fail(x, SL_CLIENT_ERR_TIMEOUT, "the server answered no ping for 61 s");
        return;
    }
    sl_crc_ping(x->crc);
    pump(x);
}

static void c_upgraded(void *arg, const char *protocol)
{
    sl_client_exec *x = arg;
    sl_crc_params p = {
        .transport = x->transport,
        .version = sl_upgrade_rc_version(protocol),
        .tty = x->tty,
        .in = x->fd[SL_CRC_STDIN] >= 0,
        .out = x->fd[SL_CRC_STDOUT] >= 0,
        .err = x->fd[SL_CRC_STDERR] >= 0,
        .spdy_window = x->spdy_window,
    };
    x->crc = sl_crc_new(&p, &crc_cb, x, &x->out);
    if (!x->crc || sl_crc_start(x->crc) != SL_OK || open_fds(x) != SL_OK) {
        fail(x, SL_CLIENT_ERR_LOCAL, "cannot set up the session (out of memory or a bad fd)");
        return;
    }
    if (x->tty && x->size_pending)
        sl_crc_resize(x->crc, x->width, x->height);
    x->last_pong = uv_now(x->loop);
    uv_timer_start(&x->ping, ping_cb, SL_CLIENT_PING_INTERVAL_MS, SL_CLIENT_PING_INTERVAL_MS);
    pump(x);
    if (x->cb.on_upgraded)
        x->cb.on_upgraded(x->arg, protocol);
}

static void c_data(void *arg, const uint8_t *data, size_t len)
{
    sl_client_exec *x = arg;
    if (x->crc)
        sl_crc_recv(x->crc, data, len);
    pump(x);
}

static void c_drained(void *arg)
{
    pump(arg);
}

static void c_eof(void *arg)
{
    sl_client_exec *x = arg;
    if (x->crc)
        sl_crc_eof(x->crc);
    fail(x, SL_CLIENT_ERR_LOST, "the server closed the connection");
}

static void c_error(void *arg, sl_client_err_kind kind, int status, const char *msg)
{
    sl_client_exec *x = arg;
    x->conn = NULL; /* it is gone */
    x->http_status = status;
    fail(x, kind, msg);
}

static const sl_cconn_callbacks cconn_cb = {
    .on_upgraded = c_upgraded,
    .on_data = c_data,
    .on_drained = c_drained,
    .on_eof = c_eof,
    .on_error = c_error,
};

/* ---- public ------------------------------------------------------------------- */

static int copy_opts(sl_client_exec *x, const sl_client_exec_opts *o)
{
    x->url = strdup(o->url ? o->url : "");
    if (!x->url || sl_upgrade_headers_dup(o->headers, o->nheaders, &x->hdrs, &x->nhdrs) != SL_OK)
        return SL_ERR_NOMEM;
    x->transport = o->transport;
    x->tty = o->tty;
    x->fd[0] = o->stdin_fd;
    x->fd[1] = o->stdout_fd;
    x->fd[2] = o->stderr_fd;
    x->width = o->width;
    x->height = o->height;
    x->size_pending = o->width && o->height;
    x->timeout_ms = o->timeout_ms ? o->timeout_ms : SL_CLIENT_DEFAULT_TIMEOUT_MS;
    x->spdy_window = o->spdy_window;
    x->high_water =
        o->output_high_water ? o->output_high_water : SL_CLIENT_DEFAULT_OUTPUT_HIGH_WATER;
    return SL_OK;
}

static void release(sl_client_exec *x)
{
    sl_upgrade_headers_free(x->hdrs, x->nhdrs);
    free(x->url);
    sl_bufq_fini(&x->out);
    free(x);
}

static void timer_closed(uv_handle_t *h)
{
    sl_client_exec *x = h->data;
    if (--x->handles == 0)
        release(x);
}

static bool opts_ok(const sl_client_exec_opts *o)
{
    if (o->transport != SL_TRANSPORT_SPDY && o->transport != SL_TRANSPORT_WEBSOCKET)
        return false;
    if (o->stdin_fd < 0 && o->stdout_fd < 0 && o->stderr_fd < 0)
        return false; /* the CRI's "one of stdin, stdout, or stderr must be set" */
    if (o->tty && o->stderr_fd >= 0)
        return false; /* no stderr stream with a terminal */
    return sl_upgrade_headers_ok(o->headers, o->nheaders);
}

void sl_client_exec_opts_init(sl_client_exec_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->struct_size = sizeof(*o);
    o->stdin_fd = o->stdout_fd = o->stderr_fd = -1;
}

/* The first release's sizes (0.2.0): a smaller struct_size is refused. */
#define OPTS_SIZE_0_2 SL_ABI_SIZE_THROUGH(sl_client_exec_opts, spdy_window)
#define CB_SIZE_0_2 SL_ABI_SIZE_THROUGH(sl_client_exec_cb, on_error)

/* The caller's options and callbacks at this library's size. */
static int read_args(sl_client_exec_opts *o, const sl_client_exec_opts *opts, sl_client_exec_cb *cb,
                     const sl_client_exec_cb *cbs)
{
    sl_client_exec_opts_init(o);
    memset(cb, 0, sizeof(*cb));
    int rc = sl_abi_copy(o, sizeof(*o), opts, OPTS_SIZE_0_2);
    if (rc == SL_OK)
        rc = sl_abi_copy(cb, sizeof(*cb), cbs, CB_SIZE_0_2);
    if (rc == SL_OK && !opts_ok(o))
        rc = SL_ERR_INVAL;
    return rc;
}

int sl_client_exec_new(uv_loop_t *loop, const sl_client_exec_opts *opts,
                       const sl_client_exec_cb *cbs, void *arg, sl_client_exec **out)
{
    sl_client_exec_opts oo;
    sl_client_exec_cb cb;
    const sl_client_exec_opts *o = &oo;
    int rc = read_args(&oo, opts, &cb, cbs);
    if (rc < 0)
        return rc;
    sl_client_exec *x = calloc(1, sizeof(*x));
    if (!x)
        return SL_ERR_NOMEM;
    x->loop = loop;
    x->cb = cb;
    x->arg = arg;
    sl_bufq_init(&x->out);
    rc = copy_opts(x, o);
    if (rc == SL_OK)
        rc = sl_upgrade_init(&x->up, o->transport, SL_UPGRADE_RC);
    if (rc == SL_OK)
        rc = sl_cconn_new(loop, x->url, &x->up, x->hdrs, x->nhdrs, x->timeout_ms, &cconn_cb, x,
                          &x->conn);
    if (rc != SL_OK) {
        release(x);
        return rc;
    }
    uv_timer_init(loop, &x->ping);
    uv_timer_init(loop, &x->notify);
    x->ping.data = x->notify.data = x;
    x->handles = 2;
    *out = x;
    return SL_OK;
}

int sl_client_exec_resize(sl_client_exec *x, uint16_t width, uint16_t height)
{
    if (x->ended)
        return SL_ERR_CLOSED;
    if (!x->tty)
        return SL_ERR_STATE;
    if (!x->crc) {
        x->width = width;
        x->height = height;
        x->size_pending = true;
        return SL_OK;
    }
    int rc = sl_crc_resize(x->crc, width, height);
    pump(x);
    return rc;
}

void sl_client_exec_free(sl_client_exec *x)
{
    if (!x || x->freed)
        return;
    x->freed = true;
    if (x->conn)
        sl_cconn_abort(x->conn);
    x->conn = NULL;
    sl_crc_free(x->crc);
    x->crc = NULL;
    for (int i = 0; i < x->nfds; i++)
        sl_fdio_free(x->fds[i].io);
    uv_close((uv_handle_t *)&x->ping, timer_closed);
    uv_close((uv_handle_t *)&x->notify, timer_closed);
}

const char *sl_client_err_kind_str(sl_client_err_kind k)
{
    switch (k) {
    case SL_CLIENT_ERR_CONNECT:
        return "cannot connect";
    case SL_CLIENT_ERR_UPGRADE:
        return "upgrade refused";
    case SL_CLIENT_ERR_PROTOCOL:
        return "protocol error";
    case SL_CLIENT_ERR_LOST:
        return "connection lost";
    case SL_CLIENT_ERR_REMOTE:
        return "remote failure";
    case SL_CLIENT_ERR_LOCAL:
        return "local failure";
    case SL_CLIENT_ERR_TIMEOUT:
        return "timeout";
    }
    return "unknown error";
}
