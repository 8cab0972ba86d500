/* The admin HTTP listener (see admin.h). */
#include "admin/admin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/prom.h"

typedef struct aconn aconn;

struct sl_admin {
    uv_loop_t *loop;
    uv_tcp_t listener;
    sl_admin_ops ops;
    aconn *conns;
    size_t nconns;
    int open_handles; /* the listener and every connection's two handles */
    bool closing;
    void (*close_cb)(void *arg);
    void *close_arg;
};

struct aconn {
    sl_admin *a;
    aconn *prev, *next;
    uv_tcp_t tcp;
    uv_timer_t timer;
    char head[SL_ADMIN_MAX_HEAD + 1];
    size_t len;
    int handles; /* tcp and timer, until both are closed */
    bool closing;
    uv_write_t wreq;
    char *out; /* the response being written */
};

/* ---- closing ---- */

static void maybe_done(sl_admin *a)
{
    if (!a->closing || a->open_handles > 0)
        return;
    void (*cb)(void *) = a->close_cb;
    void *arg = a->close_arg;
    free(a);
    if (cb)
        cb(arg);
}

static void conn_handle_closed(uv_handle_t *h)
{
    aconn *c = h->data;
    sl_admin *a = c->a;
    a->open_handles--;
    if (--c->handles == 0) {
        free(c->out);
        free(c);
    }
    maybe_done(a);
}

static void conn_close(aconn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    sl_admin *a = c->a;
    if (c->prev)
        c->prev->next = c->next;
    else
        a->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    a->nconns--;
    uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
    uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
}

/* ---- the answer ---- */

static void written_cb(uv_write_t *w, int status)
{
    (void)status;
    conn_close(w->data);
}

static const char *reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 431:
        return "Request Header Fields Too Large";
    case 503:
        return "Service Unavailable";
    case 400:
        return "Bad Request";
    default:
        return "Internal Server Error";
    }
}

/* Answers and closes the connection once written. body is copied. */
static void respond(aconn *c, int status, const char *type, const char *body, size_t len,
                    bool head_only)
{
    uv_read_stop((uv_stream_t *)&c->tcp);
    char hdr[256];
    int n =
        snprintf(hdr, sizeof(hdr),
                 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                 "Connection: close\r\n%s\r\n",
                 status, reason(status), type, len, status == 405 ? "Allow: GET, HEAD\r\n" : "");
    size_t blen = head_only ? 0 : len;
    c->out = malloc((size_t)n + blen);
    if (!c->out) {
        conn_close(c);
        return;
    }
    memcpy(c->out, hdr, (size_t)n);
    if (blen)
        memcpy(c->out + n, body, blen);
    uv_buf_t b = uv_buf_init(c->out, (unsigned)((size_t)n + blen));
    c->wreq.data = c;
    if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, written_cb) < 0)
        conn_close(c);
}

static void text(aconn *c, int status, const char *body, bool head_only)
{
    respond(c, status, "text/plain; charset=utf-8", body, strlen(body), head_only);
}

static void serve_metrics(aconn *c, bool head_only)
{
    sl_admin *a = c->a;
    char *body = NULL;
    size_t len = 0;
    if (!a->ops.metrics || a->ops.metrics(a->ops.arg, &body, &len) < 0) {
        free(body);
        text(c, 500, "metrics could not be gathered\n", head_only);
        return;
    }
    respond(c, 200, SL_PROM_CONTENT_TYPE, body, len, head_only);
    free(body);
}

static void serve_ready(aconn *c, bool head_only)
{
    sl_admin *a = c->a;
    char why[SL_ADMIN_WHY_MAX] = "", body[SL_ADMIN_WHY_MAX + 32];
    if (!a->ops.ready || a->ops.ready(a->ops.arg, why, sizeof(why))) {
        text(c, 200, "ok\n", head_only);
        return;
    }
    snprintf(body, sizeof(body), "not ready: %s\n", why);
    text(c, 503, body, head_only);
}

/* The path without its query, compared with want. */
static bool path_is(const char *path, size_t n, const char *want)
{
    size_t q = strcspn(path, "?");
    if (q < n)
        n = q;
    return n == strlen(want) && !memcmp(path, want, n);
}

/* "METHOD SP PATH SP HTTP/1.x" in the first line of the head. */
static void route(aconn *c)
{
    char *line_end = strstr(c->head, "\r\n");
    *line_end = '\0';
    char *sp1 = strchr(c->head, ' ');
    char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    if (!sp1 || !sp2 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0) {
        text(c, 400, "bad request line\n", false);
        return;
    }
    const char *path = sp1 + 1;
    size_t plen = (size_t)(sp2 - path);
    bool head_only = (size_t)(sp1 - c->head) == 4 && !memcmp(c->head, "HEAD", 4);
    bool get = (size_t)(sp1 - c->head) == 3 && !memcmp(c->head, "GET", 3);
    if (!get && !head_only)
        text(c, 405, "only GET and HEAD\n", false);
    else if (path_is(path, plen, "/healthz"))
        text(c, 200, "ok\n", head_only);
    else if (path_is(path, plen, "/readyz"))
        serve_ready(c, head_only);
    else if (path_is(path, plen, "/metrics"))
        serve_metrics(c, head_only);
    else
        text(c, 404, "not found: /healthz, /readyz, /metrics\n", head_only);
}

/* ---- reading the request head ---- */

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    aconn *c = h->data;
    *buf = uv_buf_init(c->head + c->len, (unsigned)(SL_ADMIN_MAX_HEAD - c->len));
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    (void)buf;
    aconn *c = s->data;
    if (n == 0)
        return;
    if (n < 0) {
        conn_close(c);
        return;
    }
    c->len += (size_t)n;
    c->head[c->len] = '\0';
    if (strstr(c->head, "\r\n\r\n"))
        route(c);
    else if (c->len >= SL_ADMIN_MAX_HEAD)
        text(c, 431, "request head too large\n", false);
}

static void timeout_cb(uv_timer_t *t)
{
    conn_close(t->data);
}

static void accept_cb(uv_stream_t *server, int status)
{
    sl_admin *a = server->data;
    if (status < 0)
        return;
    aconn *c = calloc(1, sizeof(*c));
    if (!c || uv_tcp_init(a->loop, &c->tcp) < 0) {
        free(c);
        return;
    }
    c->a = a;
    c->tcp.data = c->timer.data = c;
    uv_timer_init(a->loop, &c->timer);
    c->handles = 2;
    a->open_handles += 2;
    c->next = a->conns;
    if (a->conns)
        a->conns->prev = c;
    a->conns = c;
    a->nconns++;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0 || a->nconns > SL_ADMIN_MAX_CONNS) {
        conn_close(c); /* a client at the limit sees EOF */
        return;
    }
    uv_timer_start(&c->timer, timeout_cb, SL_ADMIN_TIMEOUT_MS, 0);
    uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
}

/* ---- listener ---- */

static int bind_listen(sl_admin *a, const char *address, uint16_t port, sl_error *e)
{
    struct sockaddr_storage ss;
    int rc = strchr(address, ':') ? uv_ip6_addr(address, port, (struct sockaddr_in6 *)&ss)
                                  : uv_ip4_addr(address, port, (struct sockaddr_in *)&ss);
    if (rc == 0)
        rc = uv_tcp_bind(&a->listener, (const struct sockaddr *)&ss, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&a->listener, SL_ADMIN_MAX_CONNS, accept_cb);
    if (rc < 0)
        return sl_error_set(e, -rc, "admin listener on %s port %u", address, port);
    return 0;
}

static void handle_closed(uv_handle_t *h)
{
    sl_admin *a = h->data;
    a->open_handles--;
    maybe_done(a);
}

int sl_admin_start(uv_loop_t *loop, const char *address, uint16_t port, const sl_admin_ops *ops,
                   sl_admin **out, sl_error *e)
{
    sl_admin *a = calloc(1, sizeof(*a));
    if (!a)
        return sl_error_set(e, ENOMEM, "admin listener");
    a->loop = loop;
    a->ops = *ops;
    uv_tcp_init(loop, &a->listener);
    a->listener.data = a;
    a->open_handles = 1;
    if (bind_listen(a, address, port, e) < 0) {
        sl_admin_close(a, NULL, NULL);
        return -1;
    }
    *out = a;
    return 0;
}

uint16_t sl_admin_port(const sl_admin *a)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    if (uv_tcp_getsockname(&a->listener, (struct sockaddr *)&ss, &len) < 0)
        return 0;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

void sl_admin_close(sl_admin *a, void (*cb)(void *arg), void *arg)
{
    if (!a) {
        if (cb)
            cb(arg);
        return;
    }
    a->closing = true;
    a->close_cb = cb;
    a->close_arg = arg;
    while (a->conns)
        conn_close(a->conns);
    uv_close((uv_handle_t *)&a->listener, handle_closed);
}
