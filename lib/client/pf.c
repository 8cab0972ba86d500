/* sl_client_pf: binds a connection (cconn), the port-forward core (cpf)
 * and one local fd per forwarded connection on the caller's loop.
 *
 * No head-of-line blocking: the socket is always read, except when one
 * connection holds more than max_buffered bytes its local consumer did
 * not take. Below that, a slow consumer only withholds its own stream's
 * credit (output_high_water), which stops the server on that stream alone
 * when the server uses flow control (cpf.h). User callbacks are queued
 * and delivered from a timer, so any of them may free the handle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/cconn.h"
#include "client/cpf.h"
#include "client/fdio.h"
#include "util/abi.h"
#include "sluice/client.h"

typedef struct lconn {
    struct lconn *next;
    struct sl_client_pf *pf;
    uint64_t id;
    uint16_t port;
    sl_fdio *io;
    sl_cpf_conn *k; /* NULL before the upgrade and after the end */
    size_t held;    /* credit withheld */
    bool over;      /* counted in pf->nover */
    bool remote_done;
    char *end_err; /* why it ended (server text), delivered at the local close */
} lconn;

typedef struct pf_event {
    struct pf_event *next;
    bool session; /* on_end, else on_conn_end */
    uint64_t id;
    int kind;
    int http_status;
    char *err;
} pf_event;

struct sl_client_pf {
    uv_loop_t *loop;
    sl_client_pf_cb cb;
    void *arg;
    char *url;
    sl_client_header *hdrs;
    size_t nhdrs;
    sl_transport transport;
    uint32_t timeout_ms, high_water, max_buffered, spdy_window;
    sl_upgrade up;
    sl_cconn *conn;
    sl_cpf *cpf;
    sl_bufq out;
    lconn *conns;
    size_t nactive;
    uint64_t next_id;
    int nover;
    uv_timer_t ping, notify;
    uint64_t last_pong;
    int handles;
    pf_event *ev_head, *ev_tail;
    bool ended, end_posted, freed, closing;
    int end_kind, end_status;
    char end_msg[512];
};

static void pump(sl_client_pf *pf);
static void maybe_post_end(sl_client_pf *pf);

/* ---- user callbacks, from a timer ------------------------------------------------ */

static void notify_cb(uv_timer_t *t)
{
    sl_client_pf *pf = t->data;
    while (pf->ev_head && !pf->freed) {
        pf_event *e = pf->ev_head;
        pf->ev_head = e->next;
        if (!pf->ev_head)
            pf->ev_tail = NULL;
        if (e->session && pf->cb.on_end) {
            sl_client_error err = {sizeof(err), (sl_client_err_kind)e->kind, e->http_status,
                                   e->err};
            pf->cb.on_end(pf->arg, e->kind ? &err : NULL);
        } else if (!e->session && pf->cb.on_conn_end) {
            pf->cb.on_conn_end(pf->arg, e->id, e->err);
        }
        free(e->err);
        free(e);
    }
}

static void post(sl_client_pf *pf, bool session, uint64_t id, int kind, const char *err)
{
    pf_event *e = calloc(1, sizeof(*e));
    if (!e)
        return;
    e->session = session;
    e->id = id;
    e->kind = kind;
    e->http_status = session ? pf->end_status : 0;
    e->err = err ? strdup(err) : NULL;
    if (pf->ev_tail)
        pf->ev_tail->next = e;
    else
        pf->ev_head = e;
    pf->ev_tail = e;
    uv_timer_start(&pf->notify, notify_cb, 0, 0);
}

/* ---- local connections ------------------------------------------------------- */

static void set_over(lconn *l, bool over)
{
    if (l->over == over)
        return;
    l->over = over;
    l->pf->nover += over ? 1 : -1;
}

static void update_socket(sl_client_pf *pf)
{
    if (!pf->conn || !pf->cpf)
        return;
    bool pause = pf->nover > 0 || sl_cpf_unbound(pf->cpf) > pf->max_buffered;
    if (sl_cconn_paused(pf->conn) && !pause)
        pf->last_pong = uv_now(pf->loop); /* pongs could not be read meanwhile */
    sl_cconn_pause(pf->conn, pause);
}

/* Closes the local side and reports the end. */
static void lconn_close(lconn *l, const char *err)
{
    sl_client_pf *pf = l->pf;
    for (lconn **pp = &pf->conns; *pp; pp = &(*pp)->next) {
        if (*pp == l) {
            *pp = l->next;
            break;
        }
    }
    if (l->k)
        sl_cpf_abort(pf->cpf, l->k);
    set_over(l, false);
    /* A connection cut by a failure must not look complete to the local
     * application: it gets a reset, not an end of stream. */
    if (err)
        sl_fdio_reset(l->io);
    sl_fdio_free(l->io);
    pf->nactive--;
    post(pf, false, l->id, 0, err);
    free(l->end_err);
    free(l);
    update_socket(pf);
    pump(pf);
    maybe_post_end(pf);
}

static void l_read(void *arg, const uint8_t *data, size_t len)
{
    lconn *l = arg;
    if (!l->k)
        return;
    if (sl_cpf_send(l->pf->cpf, l->k, data, len) == SL_ERR_NOMEM) {
        lconn_close(l, "out of memory");
        return;
    }
    pump(l->pf);
}

static void l_read_end(void *arg, int err)
{
    lconn *l = arg;
    char msg[160];
    if (err) {
        snprintf(msg, sizeof(msg), "reading the local connection: %s", strerror(err));
        lconn_close(l, msg);
        return;
    }
    if (l->k)
        sl_cpf_shutdown(l->pf->cpf, l->k); /* legacy: cannot be said */
    pump(l->pf);
}

static void l_written(void *arg, size_t n)
{
    lconn *l = arg;
    sl_client_pf *pf = l->pf;
    (void)n;
    size_t q = sl_fdio_queued(l->io);
    if (q <= pf->high_water / 2 && l->held && l->k) {
        sl_cpf_consumed(pf->cpf, l->k, l->held);
        l->held = 0;
    }
    set_over(l, q > pf->max_buffered / 2 && l->over);
    if (l->remote_done && q == 0) {
        lconn_close(l, l->end_err);
        return;
    }
    update_socket(pf);
    pump(pf);
}

static void l_write_error(void *arg, int err)
{
    char msg[160];
    snprintf(msg, sizeof(msg), "writing the local connection: %s", strerror(err));
    lconn_close(arg, msg);
}

static const sl_fdio_callbacks l_cb = {
    .on_read = l_read,
    .on_read_end = l_read_end,
    .on_written = l_written,
    .on_write_error = l_write_error,
};

/* Binds a local connection to the server's side. */
static int open_remote(lconn *l)
{
    sl_client_pf *pf = l->pf;
    int rc = sl_cpf_open(pf->cpf, l->port, l, &l->k);
    if (rc != SL_OK)
        return rc;
    sl_cpf_ready(pf->cpf, l->k); /* legacy: held bytes, maybe the end */
    return SL_OK;
}

/* ---- cpf callbacks ------------------------------------------------------------- */

static void p_data(void *arg, void *user, const uint8_t *data, size_t len)
{
    sl_client_pf *pf = arg;
    lconn *l = user;
    if (sl_fdio_write(l->io, data, len) != SL_OK) {
        sl_cpf_consumed(pf->cpf, l->k, len); /* nowhere to go */
        return;
    }
    size_t q = sl_fdio_queued(l->io);
    if (q <= pf->high_water)
        sl_cpf_consumed(pf->cpf, l->k, len);
    else
        l->held += len;
    if (q > pf->max_buffered)
        set_over(l, true);
    update_socket(pf);
}

static void p_remote_eof(void *arg, void *user)
{
    (void)arg;
    lconn *l = user;
    sl_fdio_shutdown(l->io);
}

static void p_conn_end(void *arg, void *user, const char *err, bool aborted)
{
    (void)arg;
    lconn *l = user;
    l->k = NULL;
    l->remote_done = true;
    if (aborted || sl_fdio_queued(l->io) == 0 || sl_fdio_failed(l->io)) {
        lconn_close(l, err);
        return;
    }
    l->end_err = err ? strdup(err) : NULL; /* closed once the queue is written */
    sl_fdio_read_pause(l->io, true);
    sl_fdio_shutdown(l->io);
}

static void p_pong(void *arg)
{
    sl_client_pf *pf = arg;
    pf->last_pong = uv_now(pf->loop);
}

static void maybe_post_end(sl_client_pf *pf)
{
    if (!pf->ended || pf->end_posted || pf->nactive > 0)
        return;
    pf->end_posted = true;
    post(pf, true, 0, pf->end_kind, pf->end_kind ? pf->end_msg : NULL);
}

static void session_over(sl_client_pf *pf, int kind, const char *msg)
{
    if (pf->ended)
        return;
    pf->ended = true;
    pf->end_kind = kind;
    snprintf(pf->end_msg, sizeof(pf->end_msg), "%s", msg ? msg : "");
    uv_timer_stop(&pf->ping);
    if (pf->conn) {
        sl_cconn_send(pf->conn, &pf->out);
        sl_cconn_finish(pf->conn);
        pf->conn = NULL;
    }
    maybe_post_end(pf);
}

static void p_end(void *arg, int kind, const char *msg)
{
    session_over(arg, kind, msg);
}

static const sl_cpf_callbacks cpf_cb = {
    .on_data = p_data,
    .on_remote_eof = p_remote_eof,
    .on_conn_end = p_conn_end,
    .on_pong = p_pong,
    .on_end = p_end,
};

/* ---- connection --------------------------------------------------------------- */

static void pump(sl_client_pf *pf)
{
    if (!pf->conn || !pf->cpf)
        return;
    size_t q = sl_cconn_queued(pf->conn);
    if (q < pf->high_water)
        sl_cpf_flush(pf->cpf, pf->high_water - q);
    sl_cconn_send(pf->conn, &pf->out);
    q = sl_cconn_queued(pf->conn);
    for (lconn *l = pf->conns; l; l = l->next)
        if (l->k)
            sl_fdio_read_pause(l->io, q > pf->high_water ||
                                          sl_cpf_pending(pf->cpf, l->k) > pf->high_water);
}

static void ping_cb(uv_timer_t *t)
{
    sl_client_pf *pf = t->data;
    if (pf->ended || !pf->cpf || !pf->conn)
        return;
    if (!sl_cconn_paused(pf->conn) &&
        uv_now(pf->loop) - pf->last_pong > SL_CLIENT_PING_TIMEOUT_MS) {
        const char *why = "the server answered no ping for 61 s";
        session_over(pf, SL_CLIENT_ERR_TIMEOUT, why);
        for (lconn *l = pf->conns; l; l = l->next)
            l->k = NULL; /* sl_cpf_close resets them all */
        sl_cpf_close(pf->cpf);
        while (pf->conns)
            lconn_close(pf->conns, why);
        return;
    }
    sl_cpf_ping(pf->cpf);
    pump(pf);
}

static void c_upgraded(void *arg, const char *protocol)
{
    sl_client_pf *pf = arg;
    sl_cpf_params p = {.transport = pf->transport, .spdy_window = pf->spdy_window};
    pf->cpf = sl_cpf_new(&p, &cpf_cb, pf, &pf->out);
    if (!pf->cpf) {
        pf->end_status = 0;
        sl_cconn_abort(pf->conn);
        pf->conn = NULL;
        session_over(pf, SL_CLIENT_ERR_LOCAL, "out of memory");
        return;
    }
    pf->last_pong = uv_now(pf->loop);
    uv_timer_start(&pf->ping, ping_cb, SL_CLIENT_PING_INTERVAL_MS, SL_CLIENT_PING_INTERVAL_MS);
    for (lconn *l = pf->conns, *next; l; l = next) {
        next = l->next;
        int rc = open_remote(l);
        if (rc != SL_OK)
            lconn_close(l, rc == SL_ERR_FULL ? "port already forwarded in this session"
                                             : "the session does not take connections");
    }
    pump(pf);
    if (pf->cb.on_upgraded)
        pf->cb.on_upgraded(pf->arg, protocol);
}

static void c_data(void *arg, const uint8_t *data, size_t len)
{
    sl_client_pf *pf = arg;
    if (pf->cpf)
        sl_cpf_recv(pf->cpf, data, len);
    pump(pf);
}

static void c_drained(void *arg)
{
    pump(arg);
}

static void c_eof(void *arg)
{
    sl_client_pf *pf = arg;
    if (pf->cpf)
        sl_cpf_eof(pf->cpf);
    session_over(pf, SL_CLIENT_ERR_LOST, "the server closed the connection");
}

static void c_error(void *arg, sl_client_err_kind kind, int status, const char *msg)
{
    sl_client_pf *pf = arg;
    pf->conn = NULL;
    pf->end_status = status;
    while (pf->conns)
        lconn_close(pf->conns, msg);
    session_over(pf, kind, msg);
}

static const sl_cconn_callbacks cconn_cb = {
    .on_upgraded = c_upgraded,
    .on_data = c_data,
    .on_drained = c_drained,
    .on_eof = c_eof,
    .on_error = c_error,
};

/* ---- public ------------------------------------------------------------------- */

static void release(sl_client_pf *pf)
{
    sl_upgrade_headers_free(pf->hdrs, pf->nhdrs);
    while (pf->ev_head) {
        pf_event *e = pf->ev_head;
        pf->ev_head = e->next;
        free(e->err);
        free(e);
    }
    free(pf->url);
    sl_bufq_fini(&pf->out);
    free(pf);
}

static void timer_closed(uv_handle_t *h)
{
    sl_client_pf *pf = h->data;
    if (--pf->handles == 0)
        release(pf);
}

static int copy_opts(sl_client_pf *pf, const sl_client_pf_opts *o)
{
    pf->url = strdup(o->url ? o->url : "");
    if (!pf->url || sl_upgrade_headers_dup(o->headers, o->nheaders, &pf->hdrs, &pf->nhdrs) != SL_OK)
        return SL_ERR_NOMEM;
    pf->transport = o->transport;
    pf->timeout_ms = o->timeout_ms ? o->timeout_ms : SL_CLIENT_DEFAULT_TIMEOUT_MS;
    pf->spdy_window = o->spdy_window;
    pf->high_water =
        o->output_high_water ? o->output_high_water : SL_CLIENT_DEFAULT_OUTPUT_HIGH_WATER;
    pf->max_buffered = o->max_buffered ? o->max_buffered : SL_CLIENT_DEFAULT_MAX_BUFFERED;
    if (pf->max_buffered < pf->high_water)
        pf->max_buffered = pf->high_water;
    return SL_OK;
}

void sl_client_pf_opts_init(sl_client_pf_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->struct_size = sizeof(*o);
}

/* The first release's sizes (0.2.0): a smaller struct_size is refused. */
#define OPTS_SIZE_0_2 SL_ABI_SIZE_THROUGH(sl_client_pf_opts, spdy_window)
#define CB_SIZE_0_2 SL_ABI_SIZE_THROUGH(sl_client_pf_cb, on_end)

/* The caller's options and callbacks at this library's size. */
static int read_args(sl_client_pf_opts *o, const sl_client_pf_opts *opts, sl_client_pf_cb *cb,
                     const sl_client_pf_cb *cbs)
{
    sl_client_pf_opts_init(o);
    memset(cb, 0, sizeof(*cb));
    int rc = sl_abi_copy(o, sizeof(*o), opts, OPTS_SIZE_0_2);
    if (rc == SL_OK)
        rc = sl_abi_copy(cb, sizeof(*cb), cbs, CB_SIZE_0_2);
    if (rc < 0)
        return rc;
    if ((o->transport != SL_TRANSPORT_SPDY && o->transport != SL_TRANSPORT_WEBSOCKET_TUNNEL &&
         o->transport != SL_TRANSPORT_WEBSOCKET_LEGACY) ||
        !sl_upgrade_headers_ok(o->headers, o->nheaders))
        return SL_ERR_INVAL;
    return SL_OK;
}

int sl_client_pf_new(uv_loop_t *loop, const sl_client_pf_opts *opts, const sl_client_pf_cb *cbs,
                     void *arg, sl_client_pf **out)
{
    sl_client_pf_opts oo;
    sl_client_pf_cb cb;
    const sl_client_pf_opts *o = &oo;
    int rc = read_args(&oo, opts, &cb, cbs);
    if (rc < 0)
        return rc;
    sl_client_pf *pf = calloc(1, sizeof(*pf));
    if (!pf)
        return SL_ERR_NOMEM;
    pf->loop = loop;
    pf->cb = cb;
    pf->arg = arg;
    sl_bufq_init(&pf->out);
    rc = copy_opts(pf, o);
    if (rc == SL_OK)
        rc = sl_upgrade_init(&pf->up, o->transport, SL_UPGRADE_PF);
    if (rc == SL_OK)
        rc = sl_cconn_new(loop, pf->url, &pf->up, pf->hdrs, pf->nhdrs, pf->timeout_ms, &cconn_cb,
                          pf, &pf->conn);
    if (rc != SL_OK) {
        release(pf);
        return rc;
    }
    uv_timer_init(loop, &pf->ping);
    uv_timer_init(loop, &pf->notify);
    pf->ping.data = pf->notify.data = pf;
    pf->handles = 2;
    *out = pf;
    return SL_OK;
}

int sl_client_pf_forward(sl_client_pf *pf, uint16_t remote_port, int local_fd, uint64_t *conn_id)
{
    if (remote_port == 0 || local_fd < 0) {
        if (local_fd >= 0)
            close(local_fd);
        return SL_ERR_INVAL;
    }
    if (pf->ended || pf->closing) {
        close(local_fd);
        return SL_ERR_CLOSED;
    }
    lconn *l = calloc(1, sizeof(*l));
    if (!l || sl_fdio_new(pf->loop, local_fd, true, true, true, &l_cb, l, &l->io) != SL_OK) {
        free(l);
        close(local_fd);
        return SL_ERR_NOMEM;
    }
    l->pf = pf;
    l->port = remote_port;
    if (pf->cpf) {
        int rc = sl_cpf_open(pf->cpf, remote_port, l, &l->k);
        if (rc != SL_OK) {
            sl_fdio_free(l->io); /* closes the fd */
            free(l);
            return rc;
        }
    }
    l->id = pf->next_id++;
    l->next = pf->conns;
    pf->conns = l;
    pf->nactive++;
    if (conn_id)
        *conn_id = l->id;
    if (l->k)
        sl_cpf_ready(pf->cpf, l->k); /* may end it at once (legacy error text) */
    pump(pf);
    return SL_OK;
}

size_t sl_client_pf_active(const sl_client_pf *pf)
{
    return pf->nactive;
}

void sl_client_pf_close(sl_client_pf *pf)
{
    if (pf->closing || pf->freed)
        return;
    pf->closing = true;
    if (pf->cpf && !pf->ended) {
        for (lconn *l = pf->conns; l; l = l->next)
            l->k = NULL; /* sl_cpf_close resets them all */
        sl_cpf_close(pf->cpf);
        pump(pf);
    }
    while (pf->conns)
        lconn_close(pf->conns, "the session was closed");
    if (pf->conn && !pf->ended) { /* not upgraded yet */
        sl_cconn_abort(pf->conn);
        pf->conn = NULL;
    }
    session_over(pf, 0, NULL);
}

void sl_client_pf_free(sl_client_pf *pf)
{
    if (!pf || pf->freed)
        return;
    pf->freed = true;
    if (pf->conn)
        sl_cconn_abort(pf->conn);
    pf->conn = NULL;
    while (pf->conns) {
        lconn *l = pf->conns;
        pf->conns = l->next;
        sl_fdio_free(l->io);
        free(l->end_err);
        free(l);
    }
    sl_cpf_free(pf->cpf);
    pf->cpf = NULL;
    uv_close((uv_handle_t *)&pf->ping, timer_closed);
    uv_close((uv_handle_t *)&pf->notify, timer_closed);
}
