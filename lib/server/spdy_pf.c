/* Port-forward over SPDY (portforward.k8s.io, protocol notes §7), plain
 * or tunnelled in WebSocket messages (SPDY/3.1+portforward.k8s.io, §8.2).
 * Each forwarded connection is a pair of client streams, error and data,
 * keyed by the requestid header. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "portforward/pf.h"
#include "server/server_impl.h"
#include "server/spdy_pipe.h"
#include "server/stream_req.h"
#include "ws/ws_conn.h"

#define REQUEST_ID_MAX 64

typedef struct spdy_pf spdy_pf;

typedef struct pf_pair {
    struct pf_pair *next;
    spdy_pf *owner;
    char request_id[REQUEST_ID_MAX];
    uint16_t port;
    uint32_t data_id, error_id;
    sl_pf *pf;
    uv_timer_t timer; /* the pair must be complete within the creation timeout */
    bool finished, paused, released;
    size_t unconsumed;
} pf_pair;

struct spdy_pf {
    sl_server *srv;
    sl_conn *c;
    sl_spdy_pipe pipe;
    sl_ws_conn *ws; /* tunnel only */
    sl_stream_req *req;
    pf_pair *pairs;
    bool gone;
    int open_handles; /* pair timers still closing */
    bool freed_pending;
};

static void pump(spdy_pf *x)
{
    sl_spdy_pipe_pump(&x->pipe);
}

static pf_pair *find_by_stream(spdy_pf *x, uint32_t id)
{
    for (pf_pair *p = x->pairs; p; p = p->next)
        if (p->data_id == id || p->error_id == id)
            return p;
    return NULL;
}

static pf_pair *find_by_request(spdy_pf *x, const char *rid)
{
    for (pf_pair *p = x->pairs; p; p = p->next)
        if (!p->finished && !strcmp(p->request_id, rid))
            return p;
    return NULL;
}

static void maybe_free_session(spdy_pf *x);

static void timer_closed(uv_handle_t *h)
{
    pf_pair *p = h->data;
    spdy_pf *x = p->owner;
    free(p);
    x->open_handles--;
    maybe_free_session(x);
}

/* Forgets a pair once its streams are gone and its connection is done. */
static void pair_release(pf_pair *p)
{
    spdy_pf *x = p->owner;
    if (p->released) /* stream callbacks may get here first, inside pair_fail */
        return;
    p->released = true;
    for (pf_pair **pp = &x->pairs; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    if (p->pf)
        sl_pf_close(p->pf);
    p->pf = NULL;
    uv_close((uv_handle_t *)&p->timer, timer_closed);
}

static void maybe_release(pf_pair *p)
{
    if (p->finished && !p->data_id && !p->error_id)
        pair_release(p);
}

/* Error text on the error stream (then FIN), data stream reset. */
static void pair_fail(pf_pair *p, const char *msg)
{
    spdy_pf *x = p->owner;
    p->finished = true;
    if (p->error_id && msg)
        sl_spdy_stream_send(x->pipe.s, p->error_id, (const uint8_t *)msg, strlen(msg), true);
    else if (p->error_id)
        sl_spdy_stream_close(x->pipe.s, p->error_id);
    if (p->data_id)
        sl_spdy_stream_reset(x->pipe.s, p->data_id, SL_SPDY_CANCEL);
    pump(x);
    maybe_release(p);
}

/* ---- sl_pf_transport, one per pair ---- */

static int t_send(void *t, const uint8_t *data, size_t len)
{
    pf_pair *p = t;
    spdy_pf *x = p->owner;
    if (!p->data_id || x->gone)
        return SL_ERR_CLOSED;
    int rc = sl_spdy_stream_send(x->pipe.s, p->data_id, data, len, false);
    pump(x);
    return rc;
}

static bool t_congested(void *t)
{
    pf_pair *p = t;
    spdy_pf *x = p->owner;
    if (!p->data_id)
        return false;
    return sl_spdy_stream_pending(x->pipe.s, p->data_id) >= x->pipe.high_water / 2;
}

static void t_pause(void *t, bool pause)
{
    pf_pair *p = t;
    spdy_pf *x = p->owner;
    p->paused = pause;
    if (sl_spdy_session_peer_flow_control(x->pipe.s)) {
        /* Only this stream's window closes; the others go on. */
        if (!pause && p->unconsumed && p->data_id) {
            sl_spdy_stream_consumed(x->pipe.s, p->data_id, p->unconsumed);
            p->unconsumed = 0;
            pump(x);
        }
        return;
    }
    /* spdystream has no flow control: without losing bytes, only TCP can
     * hold it back, and that holds every stream (documented). */
    sl_conn_pause_read(x->c, pause);
}

static void t_eof(void *t)
{
    pf_pair *p = t;
    spdy_pf *x = p->owner;
    if (p->data_id)
        sl_spdy_stream_close(x->pipe.s, p->data_id);
    pump(x);
}

static void t_done(void *t, const char *err)
{
    pf_pair *p = t;
    if (p->paused && !sl_spdy_session_peer_flow_control(p->owner->pipe.s))
        sl_conn_pause_read(p->owner->c, false);
    if (err) {
        pair_fail(p, err);
        return;
    }
    spdy_pf *x = p->owner;
    p->finished = true;
    if (p->error_id)
        sl_spdy_stream_close(x->pipe.s, p->error_id);
    pump(x);
    maybe_release(p);
}

static const sl_pf_transport pf_transport = {
    .send = t_send,
    .congested = t_congested,
    .pause_input = t_pause,
    .eof = t_eof,
    .done = t_done,
};

/* ---- pairing ---- */

static void pair_timeout_cb(uv_timer_t *t)
{
    pf_pair *p = t->data;
    if (p->pf || p->finished)
        return;
    char msg[160];
    snprintf(msg, sizeof(msg), "(conn=%p, request=%s) timed out waiting for streams",
             (void *)p->owner, p->request_id);
    pair_fail(p, msg);
}

static pf_pair *pair_new(spdy_pf *x, const char *rid, uint16_t port)
{
    pf_pair *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->owner = x;
    snprintf(p->request_id, sizeof(p->request_id), "%s", rid);
    p->port = port;
    uv_timer_init(x->srv->loop, &p->timer);
    p->timer.data = p;
    x->open_handles++;
    uv_timer_start(&p->timer, pair_timeout_cb, sl_conn_cfg(x->c)->creation_timeout_ms, 0);
    p->next = x->pairs;
    x->pairs = p;
    return p;
}

static void pair_start(pf_pair *p)
{
    spdy_pf *x = p->owner;
    uv_timer_stop(&p->timer);
    p->pf = sl_pf_new(x->srv->loop, x->srv->rt, x->req->u.pf.pod_sandbox_id, p->port, &pf_transport,
                      p, x->pipe.high_water);
    if (!p->pf) {
        pair_fail(p, "out of memory");
        return;
    }
    sl_pf_start(p->pf);
}

static int header_str(const sl_spdy_nv *nv, size_t n, const char *name, char *dst, size_t cap)
{
    const sl_spdy_nv *h = sl_spdy_nv_find(nv, n, name);
    if (!h || h->value_len == 0 || h->value_len >= cap || memchr(h->value, 0, h->value_len))
        return -1;
    memcpy(dst, h->value, h->value_len);
    dst[h->value_len] = '\0';
    return 0;
}

static int parse_port(const char *s, uint16_t *port)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*s < '0' || *s > '9' || *end || v < 1 || v > 65535)
        return -1;
    *port = (uint16_t)v;
    return 0;
}

static void on_stream_open(void *arg, uint32_t id, const sl_spdy_nv *nv, size_t n, bool fin,
                           bool uni)
{
    spdy_pf *x = arg;
    (void)fin;
    (void)uni;
    char type[16], portstr[16], rid[REQUEST_ID_MAX];
    uint16_t port;
    bool is_err = false;
    /* Header validation rejects with RST_STREAM(CANCEL) and no reply. */
    if (header_str(nv, n, "port", portstr, sizeof(portstr)) < 0 || parse_port(portstr, &port) < 0 ||
        header_str(nv, n, "streamtype", type, sizeof(type)) < 0 ||
        (!(is_err = !strcmp(type, "error")) && strcmp(type, "data"))) {
        sl_spdy_stream_reset(x->pipe.s, id, SL_SPDY_CANCEL);
        pump(x);
        return;
    }
    if (header_str(nv, n, "requestid", rid, sizeof(rid)) < 0) /* very old clients */
        snprintf(rid, sizeof(rid), "%u", is_err ? id : id - 2);
    pf_pair *p = find_by_request(x, rid);
    if (!p && !(p = pair_new(x, rid, port))) {
        sl_spdy_stream_reset(x->pipe.s, id, SL_SPDY_INTERNAL_ERROR);
        pump(x);
        return;
    }
    sl_spdy_stream_reply(x->pipe.s, id, NULL, 0, false);
    uint32_t *slot = is_err ? &p->error_id : &p->data_id;
    if (*slot) {
        char msg[160];
        snprintf(msg, sizeof(msg),
                 "error processing stream for request %s: %s stream already "
                 "assigned",
                 rid, type);
        if (p->error_id)
            sl_spdy_stream_send(x->pipe.s, p->error_id, (const uint8_t *)msg, strlen(msg), false);
        sl_spdy_stream_reset(x->pipe.s, id, SL_SPDY_CANCEL);
    } else {
        *slot = id;
        if (p->error_id && p->data_id && !p->pf && !p->finished)
            pair_start(p);
    }
    pump(x);
}

static void on_data(void *arg, uint32_t id, const uint8_t *data, size_t len)
{
    spdy_pf *x = arg;
    pf_pair *p = find_by_stream(x, id);
    if (p && id == p->data_id && p->pf && !p->finished) {
        sl_pf_input(p->pf, data, len);
        if (p->paused) {
            p->unconsumed += len;
            return;
        }
    }
    sl_spdy_stream_consumed(x->pipe.s, id, len);
}

static void on_fin(void *arg, uint32_t id)
{
    spdy_pf *x = arg;
    pf_pair *p = find_by_stream(x, id);
    if (p && id == p->data_id && p->pf)
        sl_pf_input_eof(p->pf);
}

static void on_stream_close(void *arg, uint32_t id)
{
    spdy_pf *x = arg;
    pf_pair *p = find_by_stream(x, id);
    if (!p)
        return;
    if (id == p->data_id) {
        p->data_id = 0;
        if (!p->finished) { /* the client reset the data stream: it is done */
            p->finished = true;
            if (p->error_id)
                sl_spdy_stream_close(x->pipe.s, p->error_id);
            pump(x);
        }
    } else {
        p->error_id = 0;
    }
    maybe_release(p);
}

static const sl_spdy_callbacks spdy_callbacks = {
    .on_stream_open = on_stream_open,
    .on_data = on_data,
    .on_fin = on_fin,
    .on_stream_close = on_stream_close,
};

/* ---- connection events ---- */

static void tunnel_msg(void *arg, int is_text, uint8_t *data, size_t len)
{
    spdy_pf *x = arg;
    if (is_text) { /* the tunnel carries SPDY bytes in binary messages only */
        sl_ws_conn_close(x->ws, 1003, "text message in a SPDY tunnel");
        sl_spdy_pipe_pump(&x->pipe);
        sl_conn_finish(x->c);
        return;
    }
    sl_spdy_pipe_recv(&x->pipe, data, len);
}

static void tunnel_close(void *arg, uint16_t code)
{
    spdy_pf *x = arg;
    (void)code;
    sl_spdy_pipe_pump(&x->pipe);
    sl_conn_finish(x->c);
}

static const sl_ws_callbacks tunnel_callbacks = {.on_msg = tunnel_msg, .on_close = tunnel_close};

static void resume_pairs(spdy_pf *x)
{
    for (pf_pair *p = x->pairs; p; p = p->next)
        if (p->pf && !p->finished)
            sl_pf_drained(p->pf);
}

static void p_recv(void *s, const uint8_t *data, size_t len)
{
    spdy_pf *x = s;
    uint64_t grants = sl_spdy_session_grants(x->pipe.s);
    if (!x->ws) {
        sl_spdy_pipe_recv(&x->pipe, data, len);
    } else {
        if (sl_ws_conn_recv(x->ws, data, len) < 0)
            sl_conn_finish(x->c);
        sl_spdy_pipe_pump(&x->pipe);
    }
    /* A WINDOW_UPDATE let a stream's queued data leave: read the pod again. */
    if (sl_spdy_session_grants(x->pipe.s) != grants && !x->gone)
        resume_pairs(x);
}

static void p_drained(void *s)
{
    spdy_pf *x = s;
    pump(x);
    resume_pairs(x);
}

static void maybe_free_session(spdy_pf *x)
{
    if (!x->freed_pending || x->open_handles > 0)
        return;
    sl_spdy_pipe_fini(&x->pipe);
    if (x->ws)
        sl_ws_conn_free(x->ws);
    sl_stream_req_free(x->req);
    free(x);
}

static void p_closed(void *s)
{
    spdy_pf *x = s;
    x->gone = true;
    while (x->pairs)
        pair_release(x->pairs);
    x->freed_pending = true;
    maybe_free_session(x);
}

static void p_poke(void *s)
{
    spdy_pf *x = s;
    if (!x->gone && sl_spdy_ping(x->pipe.s, NULL) == SL_OK)
        pump(x);
}

static const sl_conn_proto spdy_pf_proto = {
    .recv = p_recv,
    .drained = p_drained,
    .closed = p_closed,
    .poke = p_poke,
};

static void start_common(sl_server *srv, sl_conn *c, sl_stream_req *req, bool tunnel,
                         const uint8_t *leftover, size_t len)
{
    spdy_pf *x = calloc(1, sizeof(*x));
    if (x && tunnel)
        x->ws =
            sl_ws_conn_new(&tunnel_callbacks, x, sl_conn_out(c), sl_conn_cfg(c)->max_ws_message);
    if (!x || (tunnel && !x->ws) ||
        sl_spdy_pipe_init(&x->pipe, c, x->ws, &spdy_callbacks, x,
                          sl_conn_cfg(c)->output_high_water) < 0) {
        if (x) {
            sl_spdy_pipe_fini(&x->pipe);
            if (x->ws)
                sl_ws_conn_free(x->ws);
        }
        free(x);
        sl_stream_req_free(req);
        sl_conn_abort(c);
        return;
    }
    x->srv = srv;
    x->c = c;
    x->req = req;
    sl_conn_flush(c); /* the 101 */
    sl_conn_upgrade(c, &spdy_pf_proto, x, leftover, len);
}

void sl_spdy_pf_start(sl_server *srv, sl_conn *c, sl_stream_req *req, const uint8_t *leftover,
                      size_t len)
{
    start_common(srv, c, req, false, leftover, len);
}

void sl_spdy_tunnel_start(sl_server *srv, sl_conn *c, sl_stream_req *req, const uint8_t *leftover,
                          size_t len)
{
    start_common(srv, c, req, true, leftover, len);
}
