#include "server/conn_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>

#include "http/http_response.h"
#include "io/uvout.h"
#include "util/rbuf.h"
#include "server/server_impl.h"

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf);
static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

/* The first cause seen is the one reported. */
static void set_end_reason(sl_conn *c, const char *reason)
{
    if (!c->end_reason)
        c->end_reason = reason;
}

void sl_conn_describe(sl_conn *c, const sl_stream_req *req, const char *transport,
                      const char *protocol)
{
    const char *target = req->kind == SL_STREAM_EXEC     ? req->u.exec.container_id
                         : req->kind == SL_STREAM_ATTACH ? req->u.attach.container_id
                                                         : req->u.pf.pod_sandbox_id;
    c->kind = req->kind;
    c->transport = transport;
    c->protocol = protocol ? protocol : "";
    snprintf(c->target, sizeof(c->target), "%s", target ? target : "");
}

/* A session starts (reason NULL) or ends: the server's observer hears it. */
static void observe(sl_conn *c, const char *reason)
{
    sl_server *srv = c->srv;
    if (!srv->session_fn || !c->transport)
        return;
    sl_session_info info = {
        .struct_size = sizeof(info),
        .kind = c->kind,
        .transport = c->transport,
        .protocol = c->protocol,
        .target = c->target,
        .bytes_to_client = c->bytes_out,
        .bytes_from_client = c->bytes_in,
        .duration_ms = uv_now(srv->loop) - c->upgraded_ms,
        .end_reason = reason,
    };
    srv->session_fn(srv->session_arg, &info);
}

static void closed_cb(uv_handle_t *h)
{
    sl_conn *c = h->data;
    if (--c->open_handles > 0)
        return;
    sl_http_head_fini(&c->head);
    sl_bufq_fini(&c->out);
    free(c->raw);
    free(c);
}

void sl_conn_close(sl_conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    sl_conn_handoff_gone(c);
    sl_stream_req_free(c->adopted);
    c->adopted = NULL;
    bool was_session = c->proto != NULL;
    if (was_session) {
        set_end_reason(c, c->srv->closing ? "shutdown" : "error");
        observe(c, c->end_reason);
    }
    if (c->proto) {
        const sl_conn_proto *p = c->proto;
        c->proto = NULL;
        p->closed(c->ps);
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        c->srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    sl_server *srv = c->srv;
    uv_close((uv_handle_t *)&c->timer, closed_cb);
    uv_close((uv_handle_t *)&c->tcp, closed_cb);
    sl_server_conn_gone(srv, c, was_session);
}

static void expire_cb(uv_timer_t *t)
{
    sl_conn_close(t->data);
}

static void shutdown_cb(uv_shutdown_t *req, int status)
{
    sl_conn *c = req->data;
    if (c->closing)
        return;
    if (status < 0) {
        sl_conn_close(c);
        return;
    }
    uv_timer_start(&c->timer, expire_cb, SL_CONN_LINGER_MS, 0);
    if (c->paused || !c->reading) {
        c->paused = false;
        c->reading = true;
        uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
    }
}

static void write_cb(uv_write_t *req, int status)
{
    sl_conn *c = req->data;
    size_t n = sl_uvout_done(&c->wout, &c->out, status);
    if (status >= 0)
        c->bytes_out += n;
    if (c->closing)
        return;
    if (status < 0) {
        set_end_reason(c, "error");
        sl_conn_close(c);
        return;
    }
    if (c->state == CONN_FINISHING)
        uv_timer_start(&c->timer, expire_cb, SL_CONN_FINISH_TIMEOUT_MS, 0);
    /* Same bound as sl_conn_congested: a session fills the queue while it
     * is below the mark, so exactly at the mark is full, and a source
     * stopped then waits for this call. */
    bool was_congested = sl_bufq_len(&c->out) + n >= c->cfg.output_high_water;
    sl_conn_flush(c);
    if (c->proto && was_congested && !sl_conn_congested(c))
        c->proto->drained(c->ps);
}

void sl_conn_flush(sl_conn *c)
{
    if (c->closing)
        return;
    int rc = sl_uvout_flush(&c->wout, (uv_stream_t *)&c->tcp, &c->out, write_cb);
    if (rc < 0) {
        sl_conn_close(c);
    } else if (rc == 0 && c->state == CONN_FINISHING && !c->shutting) {
        c->shutting = true;
        c->sreq.data = c;
        if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, shutdown_cb) < 0)
            sl_conn_close(c);
    }
}

bool sl_conn_congested(const sl_conn *c)
{
    return sl_bufq_len(&c->out) >= c->cfg.output_high_water;
}

sl_bufq *sl_conn_out(sl_conn *c)
{
    return &c->out;
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)hint;
    (void)h;
    uint8_t *b = sl_rbuf_get(SL_RBUF_CONN); /* NULL: read_cb gets UV_ENOBUFS */
    *buf = uv_buf_init((char *)b, b ? SL_RBUF_SIZE : 0);
}

/* With a hand-off, every byte read before the upgrade is kept: the
 * receiver parses the head again and gets what followed it. */
static bool keep_raw(sl_conn *c, const uint8_t *data, size_t len)
{
    if (!c->keep_raw)
        return true;
    if (c->raw_len + len > c->raw_cap) {
        size_t cap = c->raw_len + len;
        uint8_t *p = realloc(c->raw, cap);
        if (!p)
            return false;
        c->raw = p;
        c->raw_cap = cap;
    }
    memcpy(c->raw + c->raw_len, data, len);
    c->raw_len += len;
    return true;
}

static void feed_head(sl_conn *c, const uint8_t *data, size_t len)
{
    if (!keep_raw(c, data, len)) {
        uv_timer_stop(&c->timer);
        sl_http_write_error(&c->out, 500, NULL, "out of memory\n");
        sl_conn_finish(c);
        return;
    }
    size_t used = sl_http_head_feed(&c->head, data, len);
    if (c->head.state == SL_HTTP_HEAD_MORE)
        return;
    uv_timer_stop(&c->timer);
    if (c->head.state == SL_HTTP_HEAD_ERROR) {
        char body[sizeof(c->head.err_text) + 1];
        snprintf(body, sizeof(body), "%s", c->head.err_text);
        sl_http_write_error(&c->out, c->head.err_status, NULL, body);
        sl_conn_finish(c);
        return;
    }
    sl_server_route(c->srv, c, &c->head.req, data + used, len - used);
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    sl_conn *c = s->data;
    if (n < 0) { /* EOF or error: the peer is gone */
        set_end_reason(c, "client_closed");
        sl_conn_close(c);
        return;
    }
    if (n == 0)
        return;
    if (c->proto) /* upgraded, also while finishing (the client's close) */
        c->bytes_in += (uint64_t)n;
    if (c->state == CONN_HEAD)
        feed_head(c, (const uint8_t *)buf->base, (size_t)n);
    else if (c->state == CONN_UPGRADED && c->proto)
        c->proto->recv(c->ps, (const uint8_t *)buf->base, (size_t)n);
    /* CONN_FINISHING: input is ignored while the answer drains;
     * CONN_HANDOFF does not read */
}

static void head_timeout_cb(uv_timer_t *t)
{
    sl_conn *c = t->data;
    sl_http_write_error(&c->out, 408, NULL, "request head not received in time\n");
    sl_conn_finish(c);
}

/* A peer that vanishes without FIN or RST (cable, NAT, a dead host) is
 * found by probing; without this its session and process stay until the
 * idle timeout (hours). The kernel counts in seconds: ms are rounded up. */
void sl_conn_set_keepalive(uv_tcp_t *tcp, const sl_server_config *cfg)
{
    uv_os_fd_t fd;
    if (!cfg->keepalive_idle_ms || uv_fileno((uv_handle_t *)tcp, &fd) < 0)
        return;
    int on = 1;
    int idle = (int)((cfg->keepalive_idle_ms + 999) / 1000);
    int intvl = (int)((cfg->keepalive_interval_ms + 999) / 1000);
    int cnt = (int)(cfg->keepalive_count ? cfg->keepalive_count : 1);
    unsigned user_ms = cfg->keepalive_idle_ms + cfg->keepalive_interval_ms * (unsigned)cnt;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    /* Data the peer never acknowledges ends the connection in the same time. */
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms, sizeof(user_ms));
}

static sl_conn *conn_new(sl_server *srv, const sl_server_config *cfg)
{
    sl_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->srv = srv;
    c->cfg = *cfg;
    c->keep_raw = srv->handoff_fn != NULL;
    sl_bufq_init(&c->out);
    sl_http_limits lim = {cfg->max_request_line, cfg->max_headers, cfg->max_head_size};
    sl_http_head_init(&c->head, &lim);
    uv_tcp_init(srv->loop, &c->tcp);
    uv_timer_init(srv->loop, &c->timer);
    c->tcp.data = c->timer.data = c->wout.req.data = c;
    c->open_handles = 2;
    c->next = srv->conns;
    if (c->next)
        c->next->prev = c;
    srv->conns = c;
    srv->nconns++;
    return c;
}

/* Answers 503 when the server has max_sessions sessions; true then. */
static bool refuse_if_full(sl_conn *c)
{
    if (c->srv->nsessions < c->srv->cfg.max_sessions)
        return false;
    sl_http_write_error(&c->out, 503, NULL, "too many streaming sessions\n");
    sl_conn_finish(c);
    return true;
}

static void start_reading(sl_conn *c)
{
    uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
    c->reading = true;
}

void sl_conn_accept(sl_server *srv, uv_stream_t *listener)
{
    sl_conn *c = conn_new(srv, &srv->cfg);
    if (!c)
        return; /* the pending connection stays in the backlog */
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) < 0) {
        sl_conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    sl_conn_set_keepalive(&c->tcp, &srv->cfg);
    if (refuse_if_full(c))
        return;
    uv_timer_start(&c->timer, head_timeout_cb, c->cfg.head_timeout_ms, 0);
    start_reading(c);
}

/* The plain end of a TLS connection's socketpair (server/tls.c): the
 * handshake was the listener's, the request head is read here. */
void sl_conn_accept_fd(sl_server *srv, int fd)
{
    sl_conn *c = conn_new(srv, &srv->cfg);
    if (!c) {
        close(fd);
        return;
    }
    if (uv_tcp_open(&c->tcp, fd) < 0) {
        close(fd);
        sl_conn_close(c);
        return;
    }
    if (refuse_if_full(c))
        return;
    uv_timer_start(&c->timer, head_timeout_cb, c->cfg.head_timeout_ms, 0);
    start_reading(c);
}

int sl_conn_adopt(sl_server *srv, int fd, const uint8_t *head, size_t len, sl_stream_req *req,
                  const sl_server_config *cfg)
{
    sl_conn *c = conn_new(srv, cfg);
    if (!c) {
        sl_stream_req_free(req);
        close(fd);
        return SL_ERR_NOMEM;
    }
    c->adopted = req;
    c->keep_raw = false;
    if (uv_tcp_open(&c->tcp, fd) < 0) {
        close(fd);
        sl_conn_close(c);
        return SL_ERR_INVAL;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    if (refuse_if_full(c))
        return SL_OK;
    start_reading(c);
    feed_head(c, head, len);
    if (c->state == CONN_HEAD && !c->closing) { /* the head was cut short */
        sl_http_write_error(&c->out, 400, NULL, "incomplete request head handed over\n");
        sl_conn_finish(c);
    }
    return SL_OK;
}

sl_stream_req *sl_conn_take_adopted(sl_conn *c)
{
    sl_stream_req *r = c->adopted;
    c->adopted = NULL;
    return r;
}

const sl_server_config *sl_conn_cfg(const sl_conn *c)
{
    return &c->cfg;
}

void sl_conn_resume_reading(sl_conn *c)
{
    if (!c->closing && !c->reading)
        start_reading(c);
}

void sl_conn_upgrade(sl_conn *c, const sl_conn_proto *proto, void *s, const uint8_t *leftover,
                     size_t len)
{
    c->state = CONN_UPGRADED;
    c->proto = proto;
    c->ps = s;
    c->srv->nsessions++;
    c->bytes_in = len;
    c->bytes_out = 0; /* the upgrade answer is queued, not yet written */
    c->upgraded_ms = uv_now(c->srv->loop);
    observe(c, NULL);
    if (len > 0)
        proto->recv(s, leftover, len);
}

/* While reads are paused an EOF cannot be seen, so the kernel's view of
 * the connection is checked instead: a peer that sent FIN or RST is gone. */
static void paused_probe_cb(uv_timer_t *t)
{
    sl_conn *c = t->data;
    uv_os_fd_t fd;
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    if (uv_fileno((uv_handle_t *)&c->tcp, &fd) < 0 ||
        getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
        return;
    if (ti.tcpi_state == TCP_CLOSE_WAIT || ti.tcpi_state == TCP_CLOSE)
        sl_conn_close(c);
    else if (c->proto && c->proto->poke)
        c->proto->poke(c->ps);
}

void sl_conn_pause_read(sl_conn *c, bool pause)
{
    if (c->closing || c->paused == pause)
        return;
    c->paused = pause;
    if (pause) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        if (c->state == CONN_UPGRADED)
            uv_timer_start(&c->timer, paused_probe_cb, SL_CONN_PAUSED_PROBE_MS,
                           SL_CONN_PAUSED_PROBE_MS);
    } else if (c->state == CONN_UPGRADED) {
        uv_timer_stop(&c->timer);
        uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
    }
}

void sl_conn_finish(sl_conn *c)
{
    if (c->closing || c->state == CONN_FINISHING)
        return;
    if (c->state == CONN_UPGRADED)
        set_end_reason(c, "exit"); /* the session ends its own way */
    c->state = CONN_FINISHING;
    uv_timer_start(&c->timer, expire_cb, SL_CONN_FINISH_TIMEOUT_MS, 0);
    sl_conn_flush(c);
}

void sl_conn_set_end_reason(sl_conn *c, const char *reason)
{
    set_end_reason(c, reason);
}

void sl_conn_abort(sl_conn *c)
{
    sl_conn_close(c);
}

void sl_conn_close_all(sl_server *srv)
{
    while (srv->conns)
        sl_conn_close(srv->conns);
}
