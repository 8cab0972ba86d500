/* A TLS connection of the streaming listener: the handshake, then a proxy
 * between the TLS side (the TCP socket, ciphertext) and the plain side (one
 * end of a socketpair whose other end an sl_conn serves). Each direction
 * holds at most about SL_TLS_PROXY_HIGH_WATER bytes: when the side it
 * writes to stops taking them, reading from the other side stops. An end
 * of input (EOF, close_notify) is passed on as a shutdown once what was
 * queued is written; an error on either side closes both. */
#include <openssl/ssl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/bufq.h"
#include "io/uvout.h"
#include "server/conn_int.h"
#include "server/server_impl.h"
#include "server/tls.h"

#define TLS_RECORD_MAX 16384u

struct sl_tls_conn {
    sl_server *srv;
    sl_tls_conn *prev, *next;
    uv_tcp_t net;
    uv_pipe_t plain;
    uv_timer_t timer; /* the handshake deadline, then the linger */
    SSL *ssl;
    BIO *rbio, *wbio; /* owned by ssl */
    sl_bufq to_net, to_plain;
    sl_uvout net_out, plain_out;
    uv_shutdown_t net_sreq, plain_sreq;
    char *nbuf, *pbuf;
    bool handshaken, plain_open, closing;
    bool net_eof, plain_eof;   /* no more input from that side */
    bool net_shut, plain_shut; /* our shutdown of that side was issued */
    bool net_paused, plain_paused;
    int open_handles;
};

static void net_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);
static void plain_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

static void closed_cb(uv_handle_t *h)
{
    sl_tls_conn *t = h->data;
    if (--t->open_handles > 0)
        return;
    sl_server *srv = t->srv;
    SSL_free(t->ssl);
    sl_bufq_fini(&t->to_net);
    sl_bufq_fini(&t->to_plain);
    free(t->nbuf);
    free(t->pbuf);
    free(t);
    sl_server_tls_gone(srv);
}

static void tc_close(sl_tls_conn *t)
{
    if (t->closing)
        return;
    t->closing = true;
    if (!t->handshaken)
        t->srv->ntls_handshaking--;
    if (t->prev)
        t->prev->next = t->next;
    else
        t->srv->tls_conns = t->next;
    if (t->next)
        t->next->prev = t->prev;
    uv_close((uv_handle_t *)&t->net, closed_cb);
    uv_close((uv_handle_t *)&t->timer, closed_cb);
    if (t->plain_open)
        uv_close((uv_handle_t *)&t->plain, closed_cb);
}

static void alloc_net(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)hint;
    *buf = uv_buf_init(((sl_tls_conn *)h->data)->nbuf, SL_TLS_READ_BUF);
}

static void alloc_plain(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)hint;
    *buf = uv_buf_init(((sl_tls_conn *)h->data)->pbuf, SL_TLS_READ_BUF);
}

/* Reading from a side stops while the other side's queue is full. */
static void pause_net(sl_tls_conn *t, bool pause)
{
    if (t->net_eof || t->net_paused == pause)
        return;
    t->net_paused = pause;
    if (pause)
        uv_read_stop((uv_stream_t *)&t->net);
    else
        uv_read_start((uv_stream_t *)&t->net, alloc_net, net_read_cb);
}

static void pause_plain(sl_tls_conn *t, bool pause)
{
    if (!t->plain_open || t->plain_eof || t->plain_paused == pause)
        return;
    t->plain_paused = pause;
    if (pause)
        uv_read_stop((uv_stream_t *)&t->plain);
    else
        uv_read_start((uv_stream_t *)&t->plain, alloc_plain, plain_read_cb);
}

/* Both sides ended their input and everything was written: done. */
static void check_done(sl_tls_conn *t)
{
    if (t->net_eof && t->plain_eof && !sl_bufq_len(&t->to_net) && !sl_bufq_len(&t->to_plain))
        tc_close(t);
}

/* Moves the records OpenSSL produced to the network queue. */
static int drain_wbio(sl_tls_conn *t)
{
    while (BIO_ctrl_pending(t->wbio) > 0) {
        size_t avail;
        uint8_t *p = sl_bufq_reserve(&t->to_net, TLS_RECORD_MAX, &avail);
        if (!p)
            return -1;
        int n = BIO_read(t->wbio, p, avail > INT32_MAX ? INT32_MAX : (int)avail);
        if (n <= 0)
            return -1;
        sl_bufq_commit(&t->to_net, (size_t)n);
    }
    return 0;
}

static void linger_cb(uv_timer_t *timer)
{
    tc_close(timer->data);
}

static void net_shutdown_cb(uv_shutdown_t *req, int status)
{
    sl_tls_conn *t = req->data;
    if (t->closing)
        return;
    if (status < 0) {
        tc_close(t);
        return;
    }
    /* The client has this long to end its side too. */
    uv_timer_start(&t->timer, linger_cb, SL_TLS_LINGER_MS, 0);
}

static void plain_shutdown_cb(uv_shutdown_t *req, int status)
{
    sl_tls_conn *t = req->data;
    if (!t->closing && status < 0)
        tc_close(t);
}

static void net_write_cb(uv_write_t *req, int status);
static void plain_write_cb(uv_write_t *req, int status);

static void flush_net(sl_tls_conn *t)
{
    if (t->closing)
        return;
    int rc = sl_uvout_flush(&t->net_out, (uv_stream_t *)&t->net, &t->to_net, net_write_cb);
    if (rc < 0) {
        tc_close(t);
    } else if (rc == 0 && t->plain_eof && !t->net_shut) {
        t->net_shut = true;
        t->net_sreq.data = t;
        if (uv_shutdown(&t->net_sreq, (uv_stream_t *)&t->net, net_shutdown_cb) < 0)
            tc_close(t);
    }
}

static void flush_plain(sl_tls_conn *t)
{
    if (t->closing || !t->plain_open)
        return;
    int rc = sl_uvout_flush(&t->plain_out, (uv_stream_t *)&t->plain, &t->to_plain, plain_write_cb);
    if (rc < 0) {
        tc_close(t);
    } else if (rc == 0 && t->net_eof && !t->plain_shut) {
        t->plain_shut = true;
        t->plain_sreq.data = t;
        if (uv_shutdown(&t->plain_sreq, (uv_stream_t *)&t->plain, plain_shutdown_cb) < 0)
            tc_close(t);
    }
}

static void net_write_cb(uv_write_t *req, int status)
{
    sl_tls_conn *t = req->data;
    sl_uvout_done(&t->net_out, &t->to_net, status);
    if (t->closing)
        return;
    if (status < 0) {
        tc_close(t);
        return;
    }
    flush_net(t);
    if (sl_bufq_len(&t->to_net) < SL_TLS_PROXY_HIGH_WATER / 2)
        pause_plain(t, false);
    check_done(t);
}

static void plain_write_cb(uv_write_t *req, int status)
{
    sl_tls_conn *t = req->data;
    sl_uvout_done(&t->plain_out, &t->to_plain, status);
    if (t->closing)
        return;
    if (status < 0) {
        tc_close(t);
        return;
    }
    flush_plain(t);
    if (sl_bufq_len(&t->to_plain) < SL_TLS_PROXY_HIGH_WATER / 2)
        pause_net(t, false);
    check_done(t);
}

/* The session failed (a bad record, a refused handshake): OpenSSL's
 * alert, if any, goes out if the socket takes it at once; then close. */
static void fail(sl_tls_conn *t)
{
    if (drain_wbio(t) == 0 && !sl_uvout_busy(&t->net_out)) {
        struct iovec iov[8];
        int n = sl_bufq_peek(&t->to_net, iov, 8);
        uv_buf_t bufs[8];
        for (int i = 0; i < n; i++)
            bufs[i] = uv_buf_init(iov[i].iov_base, (unsigned)iov[i].iov_len);
        if (n > 0)
            (void)uv_try_write((uv_stream_t *)&t->net, bufs, (unsigned)n);
    }
    tc_close(t);
}

/* No more input from the client (close_notify or EOF): the session side
 * gets EOF once what is queued for it is written. */
static void net_ended(sl_tls_conn *t)
{
    t->net_eof = true;
    uv_read_stop((uv_stream_t *)&t->net);
    flush_plain(t);
    check_done(t);
}

static void plain_ended(sl_tls_conn *t)
{
    t->plain_eof = true;
    uv_read_stop((uv_stream_t *)&t->plain);
    SSL_shutdown(t->ssl); /* queues close_notify; the client's is not awaited */
    if (drain_wbio(t) < 0) {
        tc_close(t);
        return;
    }
    flush_net(t);
    check_done(t);
}

static void decrypt(sl_tls_conn *t)
{
    for (;;) {
        size_t avail;
        uint8_t *p = sl_bufq_reserve(&t->to_plain, TLS_RECORD_MAX, &avail);
        if (!p) {
            tc_close(t);
            return;
        }
        int n = SSL_read(t->ssl, p, avail > INT32_MAX ? INT32_MAX : (int)avail);
        if (n > 0) {
            sl_bufq_commit(&t->to_plain, (size_t)n);
            continue;
        }
        int err = SSL_get_error(t->ssl, n);
        if (err == SSL_ERROR_WANT_READ)
            break;
        if (err != SSL_ERROR_ZERO_RETURN) {
            fail(t);
            return;
        }
        net_ended(t);
        break;
    }
    if (t->closing || drain_wbio(t) < 0) {
        tc_close(t);
        return;
    }
    flush_net(t);
    flush_plain(t);
    if (sl_bufq_len(&t->to_plain) >= SL_TLS_PROXY_HIGH_WATER)
        pause_net(t, true);
}

/* The plain side: a socketpair, the far end served as a connection. */
static int open_plain(sl_tls_conn *t)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
        return -1;
    uv_pipe_init(t->srv->loop, &t->plain, 0);
    t->plain.data = t;
    t->plain_out.req.data = t;
    t->plain_open = true;
    t->open_handles++;
    if (uv_pipe_open(&t->plain, sv[0]) < 0) {
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    uv_read_start((uv_stream_t *)&t->plain, alloc_plain, plain_read_cb);
    sl_conn_accept_fd(t->srv, sv[1]);
    return 0;
}

/* Returns 1 once the handshake is done, 0 while it needs more, -1 when
 * the connection was closed. */
static int handshake(sl_tls_conn *t)
{
    int rc = SSL_do_handshake(t->ssl);
    if (rc != 1) {
        if (SSL_get_error(t->ssl, rc) != SSL_ERROR_WANT_READ) {
            fail(t);
            return -1;
        }
        if (drain_wbio(t) < 0) {
            tc_close(t);
            return -1;
        }
        flush_net(t);
        return 0;
    }
    t->handshaken = true;
    t->srv->ntls_handshaking--;
    uv_timer_stop(&t->timer);
    if (drain_wbio(t) < 0 || open_plain(t) < 0) {
        tc_close(t);
        return -1;
    }
    flush_net(t);
    return 1;
}

static void net_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    sl_tls_conn *t = s->data;
    (void)buf;
    if (n == 0)
        return;
    if (n < 0) {
        if (n == UV_EOF && t->handshaken)
            net_ended(t);
        else
            tc_close(t);
        return;
    }
    if (BIO_write(t->rbio, t->nbuf, (int)n) != (int)n) {
        tc_close(t);
        return;
    }
    if (!t->handshaken && handshake(t) <= 0)
        return;
    decrypt(t);
}

static void plain_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    sl_tls_conn *t = s->data;
    (void)buf;
    if (n == 0)
        return;
    if (n < 0) {
        if (n == UV_EOF)
            plain_ended(t);
        else
            tc_close(t);
        return;
    }
    if (SSL_write(t->ssl, t->pbuf, (int)n) != (int)n || drain_wbio(t) < 0) {
        tc_close(t);
        return;
    }
    flush_net(t);
    if (sl_bufq_len(&t->to_net) >= SL_TLS_PROXY_HIGH_WATER)
        pause_plain(t, true);
}

static void handshake_timeout_cb(uv_timer_t *timer)
{
    tc_close(timer->data);
}

static sl_tls_conn *tc_new(sl_server *srv)
{
    sl_tls_conn *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->nbuf = malloc(SL_TLS_READ_BUF);
    t->pbuf = malloc(SL_TLS_READ_BUF);
    t->ssl = SSL_new(srv->tls_ctx);
    t->rbio = BIO_new(BIO_s_mem());
    t->wbio = BIO_new(BIO_s_mem());
    if (!t->nbuf || !t->pbuf || !t->ssl || !t->rbio || !t->wbio) {
        BIO_free(t->rbio);
        BIO_free(t->wbio);
        SSL_free(t->ssl);
        free(t->nbuf);
        free(t->pbuf);
        free(t);
        return NULL;
    }
    SSL_set_bio(t->ssl, t->rbio, t->wbio);
    SSL_set_accept_state(t->ssl);
    t->srv = srv;
    sl_bufq_init(&t->to_net);
    sl_bufq_init(&t->to_plain);
    return t;
}

void sl_tls_accept(sl_server *srv, uv_stream_t *listener)
{
    sl_tls_conn *t = tc_new(srv);
    if (!t)
        return; /* the pending connection stays in the backlog */
    uv_tcp_init(srv->loop, &t->net);
    uv_timer_init(srv->loop, &t->timer);
    t->net.data = t->timer.data = t->net_out.req.data = t;
    t->open_handles = 2;
    t->next = srv->tls_conns;
    if (t->next)
        t->next->prev = t;
    srv->tls_conns = t;
    srv->ntls++;
    srv->ntls_handshaking++;
    if (uv_accept(listener, (uv_stream_t *)&t->net) < 0) {
        tc_close(t);
        return;
    }
    uv_tcp_nodelay(&t->net, 1);
    sl_conn_set_keepalive(&t->net, &srv->cfg);
    uv_timer_start(&t->timer, handshake_timeout_cb, srv->cfg.head_timeout_ms, 0);
    uv_read_start((uv_stream_t *)&t->net, alloc_net, net_read_cb);
}

void sl_tls_close_all(sl_server *srv)
{
    while (srv->tls_conns)
        tc_close(srv->tls_conns);
}
