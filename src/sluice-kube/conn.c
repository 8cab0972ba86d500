/* One client connection: TLS (optional), request heads, keep-alive,
 * output with back-pressure, and the hand-over to a proxied upgrade or a
 * log stream. The only code that touches the client's socket. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http_response.h"
#include "kube.h"
#include "sluice/error.h"
#include "tls.h"

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf);
static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);
static void feed_head(sk_conn *c, const uint8_t *data, size_t len);

void sk_conn_ref(sk_conn *c)
{
    c->refs++;
}

void sk_conn_unref(sk_conn *c)
{
    if (--c->refs > 0)
        return;
    if (c->head_init)
        sl_http_head_fini(&c->head);
    sl_bufq_fini(&c->pending);
    sl_bufq_fini(&c->out);
    sk_tls_free(c->tls);
    free(c->rbuf);
    free(c);
}

bool sk_conn_gone(const sk_conn *c)
{
    return c->closing;
}

static void closed_cb(uv_handle_t *h)
{
    sk_conn_unref(h->data);
}

void sk_conn_close(sk_conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    if (c->up)
        sk_proxy_conn_closed(c);
    if (c->logs)
        sk_logs_conn_closed(c);
    if (c->prev)
        c->prev->next = c->next;
    else
        c->srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->srv->nconns--;
    uv_close((uv_handle_t *)&c->timer, closed_cb);
    uv_close((uv_handle_t *)&c->tcp, closed_cb);
}

void sk_conn_close_all(sk_server *srv)
{
    while (srv->conns)
        sk_conn_close(srv->conns);
}

static void expire_cb(uv_timer_t *t)
{
    sk_conn_close(t->data);
}

static void start_reading(sk_conn *c)
{
    if (c->closing || c->reading || c->saw_eof)
        return;
    if (uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) == 0)
        c->reading = true;
}

void sk_conn_pause(sk_conn *c, bool pause)
{
    c->read_paused = pause;
    if (pause && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    } else if (!pause) {
        start_reading(c);
    }
}

static void shutdown_cb(uv_shutdown_t *req, int status)
{
    sk_conn *c = req->data;
    if (c->closing)
        return;
    if (status < 0 || c->saw_eof) {
        sk_conn_close(c);
        return;
    }
    /* Wait for the peer's EOF so unread input never turns into a RST that
     * destroys our last bytes. */
    uv_timer_start(&c->timer, expire_cb, SK_LINGER_MS, 0);
    c->read_paused = false;
    start_reading(c);
}

static void write_cb(uv_write_t *req, int status)
{
    sk_conn *c = req->data;
    size_t n = sl_uvout_done(&c->wout, &c->out, status);
    if (c->closing)
        return;
    if (status < 0) {
        sk_conn_close(c);
        return;
    }
    bool was_congested = sl_bufq_len(&c->out) + n > SK_OUT_HIGH_WATER;
    if (c->state == KC_FINISH)
        uv_timer_start(&c->timer, expire_cb, SK_FINISH_TIMEOUT_MS, 0);
    sk_conn_flush(c);
    if (was_congested && !sk_conn_congested(c)) {
        if (c->up)
            sk_proxy_client_drained(c);
        else if (c->logs)
            sk_logs_drained(c);
    }
}

static void start_shutdown(sk_conn *c)
{
    if (c->shutting)
        return;
    c->shutting = true;
    c->sreq.data = c;
    if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, shutdown_cb) < 0)
        sk_conn_close(c);
}

void sk_conn_flush(sk_conn *c)
{
    if (c->closing)
        return;
    int rc = sl_uvout_flush(&c->wout, (uv_stream_t *)&c->tcp, &c->out, write_cb);
    if (rc < 0)
        sk_conn_close(c);
    else if (rc == 0 && c->state == KC_FINISH)
        start_shutdown(c);
}

bool sk_conn_congested(const sk_conn *c)
{
    return sl_bufq_len(&c->out) > SK_OUT_HIGH_WATER;
}

int sk_conn_send(sk_conn *c, const void *data, size_t len)
{
    if (c->closing)
        return -1;
    int rc = c->tls ? sk_tls_send(c->tls, data, len, &c->out)
                    : (sl_bufq_append(&c->out, data, len) == SL_OK ? 0 : -1);
    if (rc < 0) {
        sk_conn_close(c);
        return -1;
    }
    sk_conn_flush(c);
    return 0;
}

void sk_conn_finish(sk_conn *c)
{
    if (c->closing || c->state == KC_FINISH)
        return;
    c->state = KC_FINISH;
    if (c->tls)
        sk_tls_shutdown(c->tls, &c->out);
    uv_timer_start(&c->timer, expire_cb, SK_FINISH_TIMEOUT_MS, 0);
    sk_conn_flush(c);
}

/* Feeds the bytes that arrived while the last request was answered. */
static void feed_pending(sk_conn *c)
{
    while (!c->closing && c->state == KC_HEAD && sl_bufq_len(&c->pending) > 0) {
        uint8_t buf[4096];
        size_t n = sl_bufq_copyout(&c->pending, buf, sizeof buf);
        sl_bufq_consume(&c->pending, n);
        feed_head(c, buf, n);
    }
}

void sk_conn_done(sk_conn *c)
{
    if (c->closing || c->state != KC_BUSY)
        return;
    if (!c->keep_alive) {
        sk_conn_finish(c);
        return;
    }
    sl_http_head_fini(&c->head);
    sl_http_head_init(&c->head, NULL);
    c->state = KC_HEAD;
    uv_timer_start(&c->timer, expire_cb, SK_IDLE_TIMEOUT_MS, 0);
    if (c->saw_eof && sl_bufq_len(&c->pending) == 0) {
        sk_conn_finish(c);
        return;
    }
    feed_pending(c);
    if (c->state == KC_HEAD)
        sk_conn_pause(c, false); /* reads may have stopped while the request was answered */
}

/* HTTP/1.1 keeps the connection unless told otherwise; a request with a
 * body we never read cannot be followed by another on this connection. */
static bool wants_keep_alive(const sl_http_request *r)
{
    if (sl_http_header_has_token(r, "Connection", "close"))
        return false;
    if (r->http_major == 1 && r->http_minor == 0 &&
        !sl_http_header_has_token(r, "Connection", "keep-alive"))
        return false;
    const char *cl = sl_http_header_get(r, "Content-Length");
    if (sl_http_header_get(r, "Transfer-Encoding") || (cl && strcmp(cl, "0") != 0))
        return false;
    return true;
}

static void feed_head(sk_conn *c, const uint8_t *data, size_t len)
{
    size_t used = sl_http_head_feed(&c->head, data, len);
    if (c->head.state == SL_HTTP_HEAD_MORE)
        return;
    uv_timer_stop(&c->timer);
    if (c->head.state == SL_HTTP_HEAD_ERROR) {
        char body[sizeof c->head.err_text + 2];
        snprintf(body, sizeof body, "%s\n", c->head.err_text);
        sl_bufq q;
        sl_bufq_init(&q);
        sl_http_write_error(&q, c->head.err_status, NULL, body);
        c->state = KC_BUSY;
        while (sl_bufq_len(&q) > 0) {
            uint8_t buf[4096];
            size_t n = sl_bufq_copyout(&q, buf, sizeof buf);
            sl_bufq_consume(&q, n);
            sk_conn_send(c, buf, n);
        }
        sl_bufq_fini(&q);
        sk_conn_finish(c);
        return;
    }
    c->state = KC_BUSY;
    c->keep_alive = wants_keep_alive(&c->head.req);
    if (used < len && sl_bufq_append(&c->pending, data + used, len - used) != SL_OK) {
        sk_conn_close(c);
        return;
    }
    sk_api_handle(c, &c->head.req);
}

static void on_plain(void *arg, const uint8_t *data, size_t len)
{
    sk_conn *c = arg;
    if (c->closing)
        return;
    switch (c->state) {
    case KC_HEAD:
        feed_head(c, data, len);
        break;
    case KC_BUSY:
        if (sl_bufq_append(&c->pending, data, len) != SL_OK) {
            sk_conn_close(c);
            return;
        }
        if (sl_bufq_len(&c->pending) > SK_PENDING_MAX)
            sk_conn_pause(c, true);
        break;
    case KC_SPLICE:
        sk_proxy_client_data(c, data, len);
        break;
    case KC_FINISH:
        break; /* drained and dropped until the peer's EOF */
    }
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)hint;
    sk_conn *c = h->data;
    *buf = uv_buf_init(c->rbuf, SK_READ_BUF);
}

static void on_eof(sk_conn *c)
{
    c->saw_eof = true;
    c->reading = false;
    uv_read_stop((uv_stream_t *)&c->tcp);
    if (c->state == KC_SPLICE)
        sk_proxy_client_eof(c);
    else if (c->state == KC_BUSY && c->logs == NULL)
        return; /* answer the request; sk_conn_done closes after it */
    else
        sk_conn_close(c);
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    sk_conn *c = s->data;
    (void)buf;
    if (n == UV_EOF) {
        on_eof(c);
        return;
    }
    if (n < 0) {
        sk_conn_close(c);
        return;
    }
    if (n == 0)
        return;
    if (!c->tls) {
        on_plain(c, (const uint8_t *)c->rbuf, (size_t)n);
        return;
    }
    int rc = sk_tls_recv(c->tls, (const uint8_t *)c->rbuf, (size_t)n, &c->out, on_plain, c);
    if (!c->closing)
        sk_conn_flush(c);
    if (rc < 0 && !c->closing)
        sk_conn_finish(c);
}

static int conn_init(sk_server *srv, sk_conn *c)
{
    c->srv = srv;
    c->rbuf = malloc(SK_READ_BUF);
    sl_bufq_init(&c->pending);
    sl_bufq_init(&c->out);
    sl_http_head_init(&c->head, NULL);
    c->head_init = true;
    if (srv->ssl_ctx && !(c->tls = sk_tls_new(srv->ssl_ctx)))
        return -1;
    return c->rbuf ? 0 : -1;
}

static void peer_name(sk_conn *c)
{
    struct sockaddr_storage ss;
    int len = sizeof ss;
    snprintf(c->peer, sizeof c->peer, "unknown");
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) != 0)
        return;
    if (ss.ss_family == AF_INET)
        uv_ip4_name((struct sockaddr_in *)&ss, c->peer, sizeof c->peer);
    else if (ss.ss_family == AF_INET6)
        uv_ip6_name((struct sockaddr_in6 *)&ss, c->peer, sizeof c->peer);
}

void sk_conn_accept(sk_server *srv)
{
    sk_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return;
    uv_tcp_init(srv->loop, &c->tcp);
    uv_timer_init(srv->loop, &c->timer);
    c->tcp.data = c->timer.data = c->wout.req.data = c;
    c->refs = 2;
    c->srv = srv;
    c->next = srv->conns;
    if (c->next)
        c->next->prev = c;
    srv->conns = c;
    srv->nconns++;
    if (conn_init(srv, c) < 0 || uv_accept((uv_stream_t *)&srv->listener, (uv_stream_t *)&c->tcp)) {
        sk_conn_close(c);
        return;
    }
    if (srv->nconns > SK_MAX_CONNS) {
        sk_conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    peer_name(c);
    c->state = KC_HEAD;
    uv_timer_start(&c->timer, expire_cb, SK_HEAD_TIMEOUT_MS, 0);
    start_reading(c);
}
