#include "portforward/pf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/bufq.h"
#include "portforward/pfconn.h"
#include "sluice/error.h"

struct sl_pf {
    uv_loop_t *loop;
    const sl_runtime *rt;
    const sl_pf_transport *t;
    void *targ;
    char *sandbox;
    uint16_t port;
    sl_pfconn *pending; /* while the runtime connects */
    int fd;
    uv_poll_t poll;
    uv_timer_t closer; /* makes sl_pf_close asynchronous even without a socket */
    int events, handles;
    sl_bufq in_q; /* client bytes not yet written to the pod */
    size_t high_water;
    bool in_eof, wr_shut, rd_eof, paused, finished, closing;
    uint8_t *rbuf;
};

static void update(sl_pf *pf);

/* The kubelet library's wording (protocol notes §7.2). */
static void finish(sl_pf *pf, const char *why)
{
    if (pf->finished)
        return;
    pf->finished = true;
    if (pf->fd >= 0)
        uv_poll_stop(&pf->poll);
    if (!why) {
        pf->t->done(pf->targ, NULL);
        return;
    }
    char msg[512];
    snprintf(msg, sizeof(msg), "error forwarding port %u to pod %s, uid : %s", pf->port,
             pf->sandbox, why);
    pf->t->done(pf->targ, msg);
}

static void maybe_done(sl_pf *pf)
{
    if (pf->rd_eof && pf->wr_shut)
        finish(pf, NULL);
}

static void fail_errno(sl_pf *pf, const char *what)
{
    char why[160];
    snprintf(why, sizeof(why), "%s: %s", what, strerror(errno));
    finish(pf, why);
}

static void do_read(sl_pf *pf)
{
    for (int rounds = 0; rounds < 16 && !pf->rd_eof && !pf->finished; rounds++) {
        if (pf->t->congested(pf->targ))
            break;
        ssize_t n = read(pf->fd, pf->rbuf, SL_PF_READ_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n < 0) {
            fail_errno(pf, "read");
            return;
        }
        if (n == 0) {
            pf->rd_eof = true;
            pf->t->eof(pf->targ);
            maybe_done(pf);
            return;
        }
        if (pf->t->send(pf->targ, pf->rbuf, (size_t)n) < 0) {
            finish(pf, "client connection lost");
            return;
        }
    }
}

static void do_write(sl_pf *pf)
{
    while (sl_bufq_len(&pf->in_q) > 0) {
        struct iovec iov[16];
        int n = sl_bufq_peek(&pf->in_q, iov, 16);
        ssize_t w = writev(pf->fd, iov, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (w < 0) {
            fail_errno(pf, "write");
            return;
        }
        sl_bufq_consume(&pf->in_q, (size_t)w);
    }
    if (pf->paused && sl_bufq_len(&pf->in_q) <= pf->high_water / 2) {
        pf->paused = false;
        pf->t->pause_input(pf->targ, false);
    }
    if (pf->in_eof && !pf->wr_shut && sl_bufq_len(&pf->in_q) == 0) {
        pf->wr_shut = true;
        shutdown(pf->fd, SHUT_WR);
        maybe_done(pf);
    }
}

static void poll_cb(uv_poll_t *h, int status, int events)
{
    sl_pf *pf = h->data;
    if (status < 0)
        events = UV_READABLE | UV_WRITABLE;
    if (!pf->finished && (events & UV_WRITABLE))
        do_write(pf);
    if (!pf->finished && (events & (UV_READABLE | UV_DISCONNECT)))
        do_read(pf);
    update(pf);
}

static void update(sl_pf *pf)
{
    if (pf->fd < 0 || pf->finished || pf->closing)
        return;
    int ev = 0;
    if (!pf->rd_eof && !pf->t->congested(pf->targ))
        ev |= UV_READABLE;
    if (sl_bufq_len(&pf->in_q) > 0)
        ev |= UV_WRITABLE;
    if (ev == pf->events)
        return;
    pf->events = ev;
    if (ev)
        uv_poll_start(&pf->poll, ev, poll_cb);
    else
        uv_poll_stop(&pf->poll);
}

static void on_connected(void *owner, int fd, const char *err)
{
    sl_pf *pf = owner;
    pf->pending = NULL;
    if (fd < 0) {
        finish(pf, err);
        return;
    }
    if (uv_poll_init(pf->loop, &pf->poll, fd) < 0) {
        close(fd);
        finish(pf, "cannot watch the connection");
        return;
    }
    pf->fd = fd;
    pf->poll.data = pf;
    pf->handles++;
    do_write(pf);
    update(pf);
}

sl_pf *sl_pf_new(uv_loop_t *loop, const sl_runtime *rt, const char *sandbox_id, uint16_t port,
                 const sl_pf_transport *t, void *targ, size_t high_water)
{
    sl_pf *pf = calloc(1, sizeof(*pf));
    if (!pf)
        return NULL;
    pf->sandbox = strdup(sandbox_id);
    pf->rbuf = malloc(SL_PF_READ_CHUNK);
    if (!pf->sandbox || !pf->rbuf) {
        free(pf->sandbox);
        free(pf->rbuf);
        free(pf);
        return NULL;
    }
    pf->loop = loop;
    pf->rt = rt;
    pf->t = t;
    pf->targ = targ;
    pf->port = port;
    pf->fd = -1;
    pf->high_water = high_water;
    sl_bufq_init(&pf->in_q);
    uv_timer_init(loop, &pf->closer);
    pf->closer.data = pf;
    pf->handles = 1;
    return pf;
}

void sl_pf_start(sl_pf *pf)
{
    pf->pending = sl_pfconn_request(pf->rt, pf->sandbox, pf->port, on_connected, pf);
}

void sl_pf_input(sl_pf *pf, const uint8_t *data, size_t len)
{
    if (pf->finished || pf->closing || pf->in_eof)
        return;
    if (sl_bufq_append(&pf->in_q, data, len) < 0) {
        finish(pf, "out of memory");
        return;
    }
    if (!pf->paused && sl_bufq_len(&pf->in_q) > pf->high_water) {
        pf->paused = true;
        pf->t->pause_input(pf->targ, true);
    }
    if (pf->fd >= 0) {
        do_write(pf);
        update(pf);
    }
}

void sl_pf_input_eof(sl_pf *pf)
{
    if (pf->in_eof || pf->finished || pf->closing)
        return;
    pf->in_eof = true;
    if (pf->fd >= 0) {
        do_write(pf);
        update(pf);
    }
}

void sl_pf_drained(sl_pf *pf)
{
    if (pf->fd < 0 || pf->finished || pf->closing)
        return;
    do_read(pf);
    update(pf);
}

static void closed_cb(uv_handle_t *h)
{
    sl_pf *pf = h->data;
    if (--pf->handles > 0)
        return;
    if (pf->fd >= 0)
        close(pf->fd);
    sl_bufq_fini(&pf->in_q);
    free(pf->sandbox);
    free(pf->rbuf);
    free(pf);
}

void sl_pf_close(sl_pf *pf)
{
    if (pf->closing)
        return;
    pf->closing = true;
    pf->finished = true;
    if (pf->pending)
        sl_pfconn_abandon(pf->pending);
    pf->pending = NULL;
    if (pf->fd >= 0)
        uv_close((uv_handle_t *)&pf->poll, closed_cb);
    uv_close((uv_handle_t *)&pf->closer, closed_cb);
}
