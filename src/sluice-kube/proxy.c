/* The kubelet's UpgradeAwareHandler, in small: the client's request goes to
 * the runtime's streaming URL with the same method and headers; on 101 the
 * raw answer goes back and bytes are copied both ways until either side
 * ends; an answer >= 400 is passed back; anything else is a 500. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/http_resp.h"
#include "http/http_response.h"
#include "kube.h"
#include "sluice/error.h"
#include "tls.h"

#define WRITE_IOV_MAX 64
#define MAX_URL_HOST 256

struct sk_up {
    uv_tcp_t tcp;
    uv_connect_t creq;
    uv_write_t wreq;
    uv_shutdown_t sreq;
    sk_conn *c;   /* NULL once the client side is gone */
    sl_bufq out;  /* plain bytes for the runtime */
    sl_bufq wire; /* with TLS: the records carrying them */
    sk_tls *tls;  /* NULL: plain http:// URL */
    bool close_notify_sent;
    size_t writing;
    sl_http_resp_parser resp;
    sl_bufq raw; /* the runtime's bytes until its head is complete */
    bool connected, upgraded, closing, reading, finishing, shutting;
    char *rbuf;
};

static void up_close(sk_up *u);
static void up_flush(sk_up *u);

static void up_closed_cb(uv_handle_t *h)
{
    sk_up *u = h->data;
    sl_bufq_fini(&u->out);
    sl_bufq_fini(&u->wire);
    sk_tls_free(u->tls);
    sl_bufq_fini(&u->raw);
    sl_http_resp_fini(&u->resp);
    free(u->rbuf);
    free(u);
}

static void up_close(sk_up *u)
{
    if (u->closing)
        return;
    u->closing = true;
    if (u->c)
        u->c->up = NULL;
    u->c = NULL;
    uv_close((uv_handle_t *)&u->tcp, up_closed_cb);
}

/* Answers the client with a Status while still before the upgrade. */
static void fail(sk_up *u, int code, const char *msg)
{
    sk_conn *c = u->c;
    up_close(u);
    if (c)
        sk_respond_status(c, code, msg, NULL, NULL);
}

/* The runtime ended (or failed) after the upgrade: the client gets what is
 * queued, then the end. */
static void up_gone(sk_up *u)
{
    sk_conn *c = u->c;
    up_close(u);
    if (c) {
        sk_conn_pause(c, false);
        sk_conn_finish(c);
    }
}

/* ---- writing to the runtime ---- */

/* What goes on the socket: out itself, or with TLS the records that
 * carry it. */
static sl_bufq *up_wire(sk_up *u)
{
    return u->tls ? &u->wire : &u->out;
}

static size_t up_queued(const sk_up *u)
{
    return sl_bufq_len(&u->out) + sl_bufq_len(&u->wire);
}

/* TLS: encrypts what out holds into wire (held inside sk_tls until the
 * handshake is done); close_notify once the client finished. */
static int up_encrypt(sk_up *u)
{
    struct iovec iov[WRITE_IOV_MAX];
    while (sl_bufq_len(&u->out) > 0) {
        int n = sl_bufq_peek(&u->out, iov, WRITE_IOV_MAX);
        size_t total = 0;
        for (int i = 0; i < n; i++) {
            if (sk_tls_send(u->tls, iov[i].iov_base, iov[i].iov_len, &u->wire) < 0)
                return -1;
            total += iov[i].iov_len;
        }
        sl_bufq_consume(&u->out, total);
    }
    if (u->finishing && !u->close_notify_sent && sk_tls_handshaken(u->tls)) {
        u->close_notify_sent = true;
        sk_tls_shutdown(u->tls, &u->wire);
    }
    return 0;
}

static void up_shutdown_cb(uv_shutdown_t *req, int status)
{
    (void)req;
    (void)status; /* reading goes on until the runtime ends */
}

static void up_write_cb(uv_write_t *req, int status)
{
    sk_up *u = req->data;
    size_t n = u->writing;
    u->writing = 0;
    if (u->closing)
        return;
    if (status < 0) {
        up_gone(u);
        return;
    }
    bool was_congested = up_queued(u) > SK_OUT_HIGH_WATER;
    sl_bufq_consume(up_wire(u), n);
    up_flush(u);
    if (was_congested && up_queued(u) <= SK_OUT_HIGH_WATER && u->c)
        sk_conn_pause(u->c, false);
}

static void up_flush(sk_up *u)
{
    if (u->closing || u->writing || !u->connected)
        return;
    if (u->tls && up_encrypt(u) < 0) {
        up_gone(u);
        return;
    }
    sl_bufq *q = up_wire(u);
    if (sl_bufq_len(q) == 0) {
        if (u->finishing && !u->shutting && (!u->tls || u->close_notify_sent)) {
            u->shutting = true;
            u->sreq.data = u;
            if (uv_shutdown(&u->sreq, (uv_stream_t *)&u->tcp, up_shutdown_cb) < 0)
                up_gone(u);
        }
        return;
    }
    uv_buf_t bufs[WRITE_IOV_MAX];
    struct iovec iov[WRITE_IOV_MAX];
    int n = sl_bufq_peek(q, iov, WRITE_IOV_MAX);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        bufs[i] = uv_buf_init(iov[i].iov_base, (unsigned)iov[i].iov_len);
        total += iov[i].iov_len;
    }
    u->wreq.data = u;
    if (uv_write(&u->wreq, (uv_stream_t *)&u->tcp, bufs, (unsigned)n, up_write_cb) < 0) {
        up_gone(u);
        return;
    }
    u->writing = total;
}

/* ---- the runtime's answer ---- */

static void forward_raw(sk_up *u)
{
    struct iovec iov[WRITE_IOV_MAX];
    while (u->c && sl_bufq_len(&u->raw) > 0) {
        int n = sl_bufq_peek(&u->raw, iov, WRITE_IOV_MAX);
        size_t total = 0;
        for (int i = 0; i < n; i++) {
            sk_conn_send(u->c, iov[i].iov_base, iov[i].iov_len);
            total += iov[i].iov_len;
        }
        sl_bufq_consume(&u->raw, total);
    }
}

static bool hop_header(const char *name)
{
    static const char *const hop[] = {"Connection", "Content-Length", "Transfer-Encoding",
                                      "Keep-Alive", "Content-Type",   "Cache-Control"};
    for (size_t i = 0; i < sizeof hop / sizeof hop[0]; i++)
        if (!strcasecmp(name, hop[i]))
            return true;
    return false;
}

/* A >= 400 answer: status, headers and body as the runtime sent them,
 * re-framed with Content-Length; the connection closes after it. */
static void pass_error(sk_up *u)
{
    const sl_http_response *r = &u->resp.resp;
    sk_conn *c = u->c;
    sl_bufq h;
    sl_bufq_init(&h);
    for (size_t i = 0; i < r->nheaders; i++)
        if (!hop_header(r->headers[i].name))
            sl_bufq_appendf(&h, "%s: %s\r\n", r->headers[i].name, r->headers[i].value);
    sl_bufq_append(&h, "", 1);
    char *extra = malloc(sl_bufq_len(&h));
    if (extra)
        sl_bufq_copyout(&h, extra, sl_bufq_len(&h));
    sl_bufq_fini(&h);
    const char *ct = sl_http_resp_header(r, "Content-Type");
    up_close(u);
    c->keep_alive = false;
    /* Content-Type goes through extra; the writer's own one must not double it. */
    sk_respond_raw(c, r->status, ct ? ct : "text/plain", r->body ? (const char *)r->body : "",
                   r->body_len, extra ? extra : "");
    free(extra);
}

static void head_done(sk_up *u)
{
    int st = u->resp.resp.status;
    sk_conn *c = u->c;
    if (st == 101) {
        u->upgraded = true;
        c->state = KC_SPLICE;
        forward_raw(u);
        /* Client bytes that came while we waited go to the runtime now. */
        struct iovec iov[WRITE_IOV_MAX];
        while (sl_bufq_len(&c->pending) > 0) {
            int n = sl_bufq_peek(&c->pending, iov, WRITE_IOV_MAX);
            size_t total = 0;
            for (int i = 0; i < n; i++) {
                sl_bufq_append(&u->out, iov[i].iov_base, iov[i].iov_len);
                total += iov[i].iov_len;
            }
            sl_bufq_consume(&c->pending, total);
        }
        up_flush(u);
        sk_conn_pause(c, false);
        if (c->saw_eof)
            sk_proxy_client_eof(c);
        return;
    }
    if (st >= 400) {
        pass_error(u);
        return;
    }
    char msg[96];
    snprintf(msg, sizeof msg, "invalid upgrade response: status code %d", st);
    fail(u, 500, msg);
}

static void feed_resp(sk_up *u, const uint8_t *data, size_t len)
{
    if (sl_bufq_append(&u->raw, data, len) != SL_OK) {
        fail(u, 500, "out of memory");
        return;
    }
    sl_http_resp_feed(&u->resp, data, len);
    if (u->resp.state == SL_HTTP_RESP_DONE) {
        head_done(u);
    } else if (u->resp.state == SL_HTTP_RESP_ERROR) {
        char msg[256];
        snprintf(msg, sizeof msg, "error reading the runtime's response: %s", u->resp.err_text);
        fail(u, 500, msg);
    }
}

static void up_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)hint;
    sk_up *u = h->data;
    *buf = uv_buf_init(u->rbuf, SK_READ_BUF);
}

static void up_eof(sk_up *u, ssize_t n)
{
    if (u->upgraded) {
        up_gone(u);
        return;
    }
    sl_http_resp_eof(&u->resp);
    if (u->resp.state == SL_HTTP_RESP_DONE) {
        head_done(u);
        return;
    }
    char msg[256];
    snprintf(msg, sizeof msg, "error reading the runtime's response: %s",
             n == UV_EOF ? "connection closed before the response head" : uv_strerror((int)n));
    fail(u, 500, msg);
}

/* Plain bytes from the runtime: its answer, then the session. */
static void up_plain(void *arg, const uint8_t *data, size_t len)
{
    sk_up *u = arg;
    if (u->closing)
        return;
    if (!u->upgraded) {
        feed_resp(u, data, len);
        return;
    }
    if (!u->c) {
        up_close(u);
        return;
    }
    sk_conn_send(u->c, data, len);
    if (u->c && sk_conn_congested(u->c) && u->reading) {
        uv_read_stop((uv_stream_t *)&u->tcp);
        u->reading = false;
    }
}

/* TLS: a failed handshake is named before the upgrade; afterwards a
 * failure or the runtime's close_notify ends the session as an EOF. */
static void up_tls_recv(sk_up *u, const uint8_t *data, size_t len)
{
    if (sk_tls_recv(u->tls, data, len, &u->wire, up_plain, u) == 0) {
        up_flush(u);
        return;
    }
    if (u->closing)
        return;
    if (!sk_tls_handshaken(u->tls)) {
        const char *why = sk_tls_verify_error(u->tls);
        char msg[320];
        snprintf(msg, sizeof msg,
                 "error dialing backend: TLS handshake with the runtime failed%s%s",
                 why ? ": " : "", why ? why : "");
        fail(u, 500, msg);
        return;
    }
    up_eof(u, UV_EOF);
}

static void up_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    sk_up *u = s->data;
    (void)buf;
    if (u->closing)
        return;
    if (n < 0) {
        up_eof(u, n);
        return;
    }
    if (n == 0)
        return;
    if (u->tls)
        up_tls_recv(u, (const uint8_t *)u->rbuf, (size_t)n);
    else
        up_plain(u, (const uint8_t *)u->rbuf, (size_t)n);
}

static void connect_cb(uv_connect_t *req, int status)
{
    sk_up *u = req->data;
    if (u->closing)
        return;
    if (status < 0) {
        char msg[256];
        snprintf(msg, sizeof msg, "error dialing backend: %s", uv_strerror(status));
        fail(u, 500, msg);
        return;
    }
    u->connected = true;
    uv_tcp_nodelay(&u->tcp, 1);
    if (uv_read_start((uv_stream_t *)&u->tcp, up_alloc_cb, up_read_cb) == 0)
        u->reading = true;
    if (u->tls)
        up_tls_recv(u, NULL, 0); /* the ClientHello */
    else
        up_flush(u);
}

/* ---- calls from the client side ---- */

void sk_proxy_client_data(sk_conn *c, const uint8_t *data, size_t len)
{
    sk_up *u = c->up;
    if (!u || u->finishing)
        return;
    if (sl_bufq_append(&u->out, data, len) != SL_OK) {
        sk_conn_close(c);
        return;
    }
    up_flush(u);
    if (up_queued(u) > SK_OUT_HIGH_WATER)
        sk_conn_pause(c, true);
}

void sk_proxy_client_drained(sk_conn *c)
{
    sk_up *u = c->up;
    if (u && u->upgraded && !u->reading && !u->closing &&
        uv_read_start((uv_stream_t *)&u->tcp, up_alloc_cb, up_read_cb) == 0)
        u->reading = true;
}

/* The client half-closed: the runtime gets what is queued and an EOF; its
 * remaining output still goes to the client until it ends. */
void sk_proxy_client_eof(sk_conn *c)
{
    sk_up *u = c->up;
    if (!u) {
        sk_conn_close(c);
        return;
    }
    u->finishing = true;
    up_flush(u);
}

void sk_proxy_conn_closed(sk_conn *c)
{
    if (c->up)
        up_close(c->up);
}

/* ---- start ---- */

typedef struct target {
    char host[MAX_URL_HOST]; /* to connect to */
    char name[MAX_URL_HOST]; /* as in the URL: what the certificate must name */
    bool tls;
    int port;
    const char *path; /* into the url: path and query */
} target;

static int parse_url(const char *url, target *t, char *msg, size_t len)
{
    t->tls = strncmp(url, "https://", 8) == 0;
    if (!t->tls && strncmp(url, "http://", 7) != 0) {
        snprintf(msg, len, "unsupported streaming URL from the runtime: %s", url);
        return -1;
    }
    const char *h = url + (t->tls ? 8 : 7), *slash = strchr(h, '/');
    t->path = slash ? slash : "/";
    size_t hl = slash ? (size_t)(slash - h) : strlen(h);
    const char *colon = NULL;
    for (const char *p = h; p < h + hl; p++)
        if (*p == ':')
            colon = p; /* the last one: [v6]:port */
    t->port = colon ? atoi(colon + 1) : t->tls ? 443 : 80;
    size_t nl = colon ? (size_t)(colon - h) : hl;
    if (nl >= 2 && h[0] == '[' && h[nl - 1] == ']') {
        h++;
        nl -= 2;
    }
    if (nl == 0 || nl >= sizeof t->host || t->port <= 0 || t->port > 65535) {
        snprintf(msg, len, "malformed streaming URL from the runtime: %s", url);
        return -1;
    }
    memcpy(t->host, h, nl);
    t->host[nl] = '\0';
    memcpy(t->name, t->host, nl + 1);
    if (!strcmp(t->host, "localhost"))
        snprintf(t->host, sizeof t->host, "127.0.0.1");
    return 0;
}

static bool skip_header(const char *name)
{
    return !strcasecmp(name, "Host") || !strcasecmp(name, "Authorization") ||
           !strcasecmp(name, "X-Forwarded-For");
}

/* The request line with the runtime's path, the client's headers (Host
 * kept as the client sent it, our token never), X-Forwarded-For. */
static int build_request(sk_up *u, sk_conn *c, const sl_http_request *req, const target *t)
{
    const char *host = sl_http_header_get(req, "Host");
    const char *xff = sl_http_header_get(req, "X-Forwarded-For");
    int rc = sl_bufq_appendf(&u->out, "%s %s HTTP/1.1\r\nHost: %s\r\n", req->method, t->path,
                             host ? host : t->host);
    for (size_t i = 0; rc == SL_OK && i < req->nheaders; i++)
        if (!skip_header(req->headers[i].name))
            rc =
                sl_bufq_appendf(&u->out, "%s: %s\r\n", req->headers[i].name, req->headers[i].value);
    if (rc == SL_OK)
        rc = sl_bufq_appendf(&u->out, "X-Forwarded-For: %s%s%s\r\n\r\n", xff ? xff : "",
                             xff ? ", " : "", c->peer);
    return rc == SL_OK ? 0 : -1;
}

static int resolve(const target *t, struct sockaddr_storage *ss)
{
    if (uv_ip4_addr(t->host, t->port, (struct sockaddr_in *)ss) == 0)
        return 0;
    return uv_ip6_addr(t->host, t->port, (struct sockaddr_in6 *)ss);
}

void sk_proxy_start(sk_conn *c, const sl_http_request *req, const char *url)
{
    target t;
    char msg[512];
    struct sockaddr_storage ss;
    if (parse_url(url, &t, msg, sizeof msg) < 0) {
        sk_respond_status(c, 500, msg, NULL, NULL);
        return;
    }
    if (resolve(&t, &ss) != 0) {
        snprintf(msg, sizeof msg, "streaming URL host is not an IP address: %s", url);
        sk_respond_status(c, 500, msg, NULL, NULL);
        return;
    }
    sk_up *u = calloc(1, sizeof(*u));
    if (!u || !(u->rbuf = malloc(SK_READ_BUF))) {
        free(u);
        sk_respond_status(c, 500, "out of memory", NULL, NULL);
        return;
    }
    sl_bufq_init(&u->out);
    sl_bufq_init(&u->wire);
    sl_bufq_init(&u->raw);
    sl_http_resp_init(&u->resp, NULL);
    uv_tcp_init(c->srv->loop, &u->tcp);
    u->tcp.data = u->creq.data = u;
    u->c = c;
    c->up = u;
    if (build_request(u, c, req, &t) < 0) {
        fail(u, 500, "out of memory");
        return;
    }
    if (t.tls && !(u->tls = sk_tls_client_new(c->srv->rt_ssl_ctx, t.name))) {
        fail(u, 500, "cannot start TLS towards the runtime's streaming URL");
        return;
    }
    int rc = uv_tcp_connect(&u->creq, &u->tcp, (struct sockaddr *)&ss, connect_cb);
    if (rc < 0) {
        snprintf(msg, sizeof msg, "error dialing backend: %s", uv_strerror(rc));
        fail(u, 500, msg);
    }
}
