/* The client's TCP connection (see cconn.h). */
#include "client/cconn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/uvout.h"
#include "sluice/error.h"

#define READ_BUF_SIZE (64u * 1024)
#define ERR_MAX 512

typedef enum cstate {
    ST_CONNECTING, /* resolving or connecting */
    ST_HEAD,       /* request sent, reading the answer */
    ST_UPGRADED,   /* the owner gets the bytes */
    ST_FINISHING,  /* our last bytes, then close */
    ST_DEAD,       /* closing; no callbacks */
} cstate;

struct sl_cconn {
    uv_loop_t *loop;
    cstate state;
    uv_tcp_t tcp;
    uv_timer_t timer; /* answer timeout, then linger */
    uv_getaddrinfo_t gai;
    uv_connect_t creq;
    sl_uvout wout;
    uv_shutdown_t sreq;
    bool tcp_live, resolving, connected, reading, paused, shutting, shut_done, eof_seen;
    struct addrinfo *ai, *next_ai;
    sl_client_url url;
    sl_upgrade up;
    sl_http_resp_parser resp;
    sl_bufq out;
    int handles; /* open handles + a pending getaddrinfo */
    sl_cconn_callbacks cb;
    void *arg;
    char *rbuf;
    /* an error found in sl_cconn_new, reported from the timer */
    sl_client_err_kind early_kind;
    char early_msg[ERR_MAX];
};

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);
static void try_connect(sl_cconn *c);
static void flush(sl_cconn *c);

static void maybe_free(sl_cconn *c)
{
    if (c->state != ST_DEAD || c->handles > 0)
        return;
    if (c->ai)
        uv_freeaddrinfo(c->ai);
    sl_client_url_fini(&c->url);
    sl_http_resp_fini(&c->resp);
    sl_bufq_fini(&c->out);
    free(c->rbuf);
    free(c);
}

static void handle_closed(uv_handle_t *h)
{
    sl_cconn *c = h->data;
    c->handles--;
    maybe_free(c);
}

/* Stops everything; the memory goes once the handles are closed. */
static void kill_conn(sl_cconn *c)
{
    if (c->state == ST_DEAD)
        return;
    c->state = ST_DEAD;
    if (!uv_is_closing((uv_handle_t *)&c->timer))
        uv_close((uv_handle_t *)&c->timer, handle_closed);
    if (c->tcp_live && !uv_is_closing((uv_handle_t *)&c->tcp))
        uv_close((uv_handle_t *)&c->tcp, handle_closed);
    maybe_free(c);
}

static void report(sl_cconn *c, sl_client_err_kind kind, int status, const char *msg)
{
    char copy[ERR_MAX];
    snprintf(copy, sizeof(copy), "%s", msg);
    sl_cconn_callbacks cb = c->cb;
    void *arg = c->arg;
    kill_conn(c);
    if (cb.on_error)
        cb.on_error(arg, kind, status, copy);
}

static void report_uv(sl_cconn *c, sl_client_err_kind kind, const char *what, int err)
{
    char msg[ERR_MAX];
    snprintf(msg, sizeof(msg), "%s %s:%u: %s", what, c->url.host, c->url.port, uv_strerror(err));
    report(c, kind, 0, msg);
}

/* ---- answer ------------------------------------------------------------------ */

static void answer_done(sl_cconn *c, const uint8_t *rest, size_t len)
{
    char msg[ERR_MAX];
    const char *proto = NULL;
    if (c->resp.state == SL_HTTP_RESP_ERROR) {
        snprintf(msg, sizeof(msg), "invalid upgrade response: %s", c->resp.err_text);
        report(c, SL_CLIENT_ERR_UPGRADE, 0, msg);
        return;
    }
    if (sl_upgrade_check(&c->up, &c->resp.resp, &proto, msg, sizeof(msg)) < 0) {
        report(c, SL_CLIENT_ERR_UPGRADE, c->resp.resp.status == 101 ? 0 : c->resp.resp.status, msg);
        return;
    }
    uv_timer_stop(&c->timer);
    c->state = ST_UPGRADED;
    if (c->cb.on_upgraded)
        c->cb.on_upgraded(c->arg, proto);
    if (len > 0 && c->state == ST_UPGRADED && c->cb.on_data)
        c->cb.on_data(c->arg, rest, len);
}

static void feed_answer(sl_cconn *c, const uint8_t *data, size_t len)
{
    size_t used = sl_http_resp_feed(&c->resp, data, len);
    if (c->resp.state != SL_HTTP_RESP_MORE)
        answer_done(c, data + used, c->resp.state == SL_HTTP_RESP_DONE ? len - used : 0);
}

/* ---- reading ----------------------------------------------------------------- */

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)hint;
    sl_cconn *c = h->data;
    *buf = uv_buf_init(c->rbuf, READ_BUF_SIZE);
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    sl_cconn *c = s->data;
    (void)buf;
    if (n == 0 || c->state == ST_DEAD)
        return;
    if (n < 0) {
        if (c->state == ST_HEAD) {
            sl_http_resp_eof(&c->resp);
            answer_done(c, NULL, 0);
            return;
        }
        c->eof_seen = true;
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
        if (c->state == ST_UPGRADED) {
            c->state = ST_FINISHING; /* nothing more to read; the owner decides */
            if (c->cb.on_eof)
                c->cb.on_eof(c->arg);
        } else if (c->shut_done) {
            kill_conn(c); /* the server's EOF after our last byte */
        }
        return;
    }
    if (c->state == ST_HEAD)
        feed_answer(c, (const uint8_t *)c->rbuf, (size_t)n);
    else if (c->state == ST_UPGRADED && c->cb.on_data)
        c->cb.on_data(c->arg, (const uint8_t *)c->rbuf, (size_t)n);
    /* ST_FINISHING: late bytes are dropped */
}

static void start_reading(sl_cconn *c)
{
    if (c->reading || c->paused || c->state == ST_DEAD)
        return;
    if (uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) == 0)
        c->reading = true;
}

/* ---- writing ------------------------------------------------------------------ */

static void linger_cb(uv_timer_t *t)
{
    kill_conn(t->data);
}

static void shutdown_cb(uv_shutdown_t *req, int status)
{
    sl_cconn *c = req->data;
    if (c->state == ST_DEAD)
        return;
    if (status < 0) {
        kill_conn(c);
        return;
    }
    c->shut_done = true;
    if (c->eof_seen) {
        kill_conn(c);
        return;
    }
    uv_timer_start(&c->timer, linger_cb, SL_CCONN_LINGER_MS, 0);
    c->paused = false;
    start_reading(c); /* drain until the server's EOF */
}

static void write_cb(uv_write_t *req, int status)
{
    sl_cconn *c = req->data;
    sl_uvout_done(&c->wout, &c->out, status);
    if (c->state == ST_DEAD)
        return;
    if (status < 0) {
        if (c->state == ST_UPGRADED) {
            c->state = ST_FINISHING;
            if (c->cb.on_eof)
                c->cb.on_eof(c->arg);
        } else if (c->state == ST_FINISHING) {
            kill_conn(c);
        } else {
            report_uv(c, SL_CLIENT_ERR_CONNECT, "writing to", status);
        }
        return;
    }
    flush(c);
    if (c->state == ST_UPGRADED && c->cb.on_drained)
        c->cb.on_drained(c->arg);
}

static void flush(sl_cconn *c)
{
    if (!c->connected || c->state == ST_DEAD)
        return;
    int rc = sl_uvout_flush(&c->wout, (uv_stream_t *)&c->tcp, &c->out, write_cb);
    if (rc < 0) {
        kill_conn(c);
    } else if (rc == 0 && c->state == ST_FINISHING && !c->shutting) {
        c->shutting = true;
        c->sreq.data = c;
        if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, shutdown_cb) < 0)
            kill_conn(c);
    }
}

/* ---- connecting ------------------------------------------------------------ */

static void retry_closed(uv_handle_t *h)
{
    sl_cconn *c = h->data;
    c->handles--;
    if (c->state == ST_DEAD)
        maybe_free(c);
    else
        try_connect(c);
}

static void connect_cb(uv_connect_t *req, int status)
{
    sl_cconn *c = req->data;
    if (c->state == ST_DEAD)
        return;
    if (status < 0) {
        if (!c->next_ai) {
            report_uv(c, SL_CLIENT_ERR_CONNECT, "connecting to", status);
            return;
        }
        /* a failed uv_tcp_t cannot connect again: close it, then retry */
        c->tcp_live = false;
        uv_close((uv_handle_t *)&c->tcp, retry_closed);
        return;
    }
    c->connected = true;
    c->state = ST_HEAD;
    uv_tcp_nodelay(&c->tcp, 1);
    start_reading(c);
    flush(c);
}

static void try_connect(sl_cconn *c)
{
    struct addrinfo *a = c->next_ai;
    c->next_ai = a->ai_next;
    if (uv_tcp_init(c->loop, &c->tcp) != 0) {
        report(c, SL_CLIENT_ERR_CONNECT, 0, "cannot create a socket");
        return;
    }
    c->tcp.data = c;
    c->tcp_live = true;
    c->handles++;
    c->creq.data = c;
    int rc = uv_tcp_connect(&c->creq, &c->tcp, a->ai_addr, connect_cb);
    if (rc < 0)
        report_uv(c, SL_CLIENT_ERR_CONNECT, "connecting to", rc);
}

static void resolved_cb(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    sl_cconn *c = req->data;
    c->resolving = false;
    c->handles--;
    c->ai = res;
    c->next_ai = res;
    if (c->state == ST_DEAD) {
        maybe_free(c);
        return;
    }
    if (status < 0 || !res) {
        report_uv(c, SL_CLIENT_ERR_CONNECT, "resolving", status < 0 ? status : UV_EAI_NONAME);
        return;
    }
    try_connect(c);
}

static void timeout_cb(uv_timer_t *t)
{
    sl_cconn *c = t->data;
    char msg[ERR_MAX];
    if (c->early_msg[0]) {
        report(c, c->early_kind, 0, c->early_msg);
        return;
    }
    snprintf(msg, sizeof(msg), "no %s from %s:%u in time",
             c->state == ST_CONNECTING ? "connection" : "upgrade answer", c->url.host, c->url.port);
    report(c, SL_CLIENT_ERR_TIMEOUT, 0, msg);
}

static int start(sl_cconn *c, const char *url, const sl_client_header *h, size_t n,
                 uint32_t timeout_ms)
{
    const char *why = NULL;
    int rc = sl_client_url_parse(&c->url, url, &why);
    if (rc == SL_ERR_NOMEM)
        return rc;
    if (rc != SL_OK) {
        c->early_kind = SL_CLIENT_ERR_CONNECT;
        snprintf(c->early_msg, sizeof(c->early_msg), "bad URL: %s", why);
        uv_timer_start(&c->timer, timeout_cb, 0, 0);
        return SL_OK;
    }
    rc = sl_upgrade_write_request(&c->up, &c->url, h, n, &c->out);
    if (rc != SL_OK)
        return rc;
    char port[8];
    snprintf(port, sizeof(port), "%u", c->url.port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    c->gai.data = c;
    if (uv_getaddrinfo(c->loop, &c->gai, resolved_cb, c->url.host, port, &hints) < 0)
        return SL_ERR_NOMEM;
    c->resolving = true;
    c->handles++;
    uv_timer_start(&c->timer, timeout_cb, timeout_ms, 0);
    return SL_OK;
}

int sl_cconn_new(uv_loop_t *loop, const char *url, const sl_upgrade *up,
                 const sl_client_header *headers, size_t nheaders, uint32_t timeout_ms,
                 const sl_cconn_callbacks *cb, void *arg, sl_cconn **out)
{
    sl_cconn *c = calloc(1, sizeof(*c));
    char *rbuf = malloc(READ_BUF_SIZE);
    if (!c || !rbuf) {
        free(c);
        free(rbuf);
        return SL_ERR_NOMEM;
    }
    c->loop = loop;
    c->rbuf = rbuf;
    c->up = *up;
    c->cb = *cb;
    c->arg = arg;
    c->state = ST_CONNECTING;
    sl_bufq_init(&c->out);
    sl_http_resp_init(&c->resp, NULL);
    uv_timer_init(loop, &c->timer);
    c->timer.data = c->wout.req.data = c;
    c->handles = 1;
    int rc = start(c, url, headers, nheaders, timeout_ms);
    if (rc != SL_OK) {
        kill_conn(c);
        return rc;
    }
    *out = c;
    return SL_OK;
}

void sl_cconn_send(sl_cconn *c, sl_bufq *q)
{
    if (c->state == ST_DEAD || sl_bufq_len(q) == 0)
        return;
    /* relink the chunks: no copy */
    if (c->out.tail)
        c->out.tail->next = q->head;
    else
        c->out.head = q->head;
    c->out.tail = q->tail;
    c->out.len += q->len;
    sl_bufq_init(q);
    flush(c);
}

size_t sl_cconn_queued(const sl_cconn *c)
{
    return sl_bufq_len(&c->out);
}

void sl_cconn_pause(sl_cconn *c, bool pause)
{
    if (c->state != ST_UPGRADED || c->paused == pause)
        return;
    c->paused = pause;
    if (pause && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    } else if (!pause) {
        start_reading(c);
    }
}

bool sl_cconn_paused(const sl_cconn *c)
{
    return c->paused;
}

void sl_cconn_finish(sl_cconn *c)
{
    if (c->state == ST_DEAD)
        return;
    if (!c->connected) {
        kill_conn(c);
        return;
    }
    c->state = ST_FINISHING;
    c->cb = (sl_cconn_callbacks){0};
    /* the shutdown replaces it with the linger timer */
    uv_timer_start(&c->timer, linger_cb, SL_CCONN_FINISH_TIMEOUT_MS, 0);
    flush(c);
}

void sl_cconn_abort(sl_cconn *c)
{
    kill_conn(c);
}
