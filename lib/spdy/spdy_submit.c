/* The outbound half of sl_spdy_session: opening, replying, resetting,
 * per-stream send queues, fair flushing and flow-control credit. */
#include "spdy/spdy_session_int.h"

#include <stdlib.h>

#include "sluice/error.h"

/* ---- send queue (round-robin) --------------------------------------------- */

static void enqueue(sl_spdy_session *s, sl_spdy_stream *st)
{
    if (st->queued)
        return;
    st->qnext = NULL;
    if (s->qtail)
        s->qtail->qnext = st;
    else
        s->qhead = st;
    s->qtail = st;
    st->queued = true;
    s->nqueued++;
}

static sl_spdy_stream *dequeue(sl_spdy_session *s)
{
    sl_spdy_stream *st = s->qhead;
    if (!st)
        return NULL;
    s->qhead = st->qnext;
    if (!s->qhead)
        s->qtail = NULL;
    st->qnext = NULL;
    st->queued = false;
    s->nqueued--;
    return st;
}

void sl_spdy_unqueue(sl_spdy_session *s, sl_spdy_stream *st)
{
    if (!st->queued)
        return;
    sl_spdy_stream *prev = NULL;
    for (sl_spdy_stream *q = s->qhead; q != st; q = q->qnext)
        prev = q;
    if (prev)
        prev->qnext = st->qnext;
    else
        s->qhead = st->qnext;
    if (s->qtail == st)
        s->qtail = prev;
    st->qnext = NULL;
    st->queued = false;
    s->nqueued--;
}

static bool has_work(const sl_spdy_stream *st)
{
    return sl_bufq_len(&st->oq) > 0 || (st->fin_queued && !st->out_closed);
}

/* Can this stream put a frame into out now? */
static bool sendable(const sl_spdy_session *s, const sl_spdy_stream *st)
{
    if (!st->replied) /* ours: wait for SYN_REPLY (spdystream drops earlier DATA) */
        return false;
    if (sl_bufq_len(&st->oq) == 0)
        return st->fin_queued && !st->out_closed;
    if (s->peer_fc && st->send_window <= 0)
        return false;
    if (s->peer_session_fc && s->send_window <= 0)
        return false;
    return true;
}

/* Largest frame the windows allow now (enforced ones only). */
static size_t window_room(const sl_spdy_session *s, const sl_spdy_stream *st, size_t n)
{
    if (s->peer_fc && (int64_t)n > st->send_window)
        n = st->send_window > 0 ? (size_t)st->send_window : 0;
    if (s->peer_session_fc && (int64_t)n > s->send_window)
        n = s->send_window > 0 ? (size_t)s->send_window : 0;
    return n;
}

/* Writes one DATA frame (at most one quantum, within enforced windows) and
 * the FIN once the queue is empty. */
static int emit_one(sl_spdy_session *s, sl_spdy_stream *st)
{
    size_t n = sl_bufq_len(&st->oq);
    if (n > SL_SPDY_MAX_DATA_FRAME)
        n = SL_SPDY_MAX_DATA_FRAME;
    n = window_room(s, st, n);
    if (n) {
        int rc = sl_spdy_write_data_from(s->out, st->id, 0, &st->oq, n);
        if (rc != SL_OK)
            return rc;
        /* windows are tracked even when not enforced, so they are right
         * if the peer starts flow control later */
        st->send_window -= (int64_t)n;
        s->send_window -= (int64_t)n;
    }
    if (sl_bufq_len(&st->oq) == 0 && st->fin_queued && !st->out_closed) {
        int rc = sl_spdy_write_data(s->out, st->id, SL_SPDY_FLAG_FIN, NULL, 0);
        if (rc != SL_OK)
            return rc;
        st->out_closed = true;
    }
    return SL_OK;
}

/* One round: every stream queued at its start gets at most one turn. */
static int flush_round(sl_spdy_session *s, size_t high_water, bool *progress)
{
    size_t turns = s->nqueued;
    for (size_t i = 0; i < turns && s->qhead && sl_bufq_len(s->out) < high_water; i++) {
        sl_spdy_stream *st = dequeue(s);
        if (sendable(s, st)) {
            int rc = emit_one(s, st);
            if (rc != SL_OK) {
                enqueue(s, st);
                return rc;
            }
            *progress = true;
        }
        if (has_work(st))
            enqueue(s, st);
        else
            sl_spdy_stream_maybe_done(s, st); /* may fire on_stream_close */
    }
    return SL_OK;
}

int sl_spdy_session_flush(sl_spdy_session *s, size_t high_water)
{
    if (s->dead)
        return s->dead;
    while (s->qhead && sl_bufq_len(s->out) < high_water) {
        bool progress = false;
        int rc = flush_round(s, high_water, &progress);
        if (rc != SL_OK)
            return rc;
        if (!progress)
            break;
    }
    return SL_OK;
}

bool sl_spdy_session_want_write(const sl_spdy_session *s)
{
    if (s->dead)
        return false;
    for (const sl_spdy_stream *st = s->qhead; st; st = st->qnext)
        if (sendable(s, st))
            return true;
    return false;
}

/* ---- flow-control credit ----------------------------------------------------- */

/* Credit goes out once the peer uses flow control, or we announced ours
 * and the peer has not shown that it ignores it (peer_silent). */
static bool credit_on(const sl_spdy_session *s)
{
    return (s->peer_fc || (s->announced && !s->peer_silent)) && !s->dead;
}

/* Sends the credit as WINDOW_UPDATE(s) once it reached threshold. */
static int send_credit(sl_spdy_session *s, uint32_t id, uint64_t *credit, uint64_t threshold)
{
    while (*credit && *credit >= threshold) {
        uint32_t delta = *credit > SL_SPDY_MAX_WINDOW ? SL_SPDY_MAX_WINDOW : (uint32_t)*credit;
        int rc = sl_spdy_write_window_update(s->out, id, delta);
        if (rc != SL_OK)
            return rc;
        *credit -= delta;
    }
    return SL_OK;
}

/* Credit goes back in half-window steps: the window reopens before the
 * peer runs dry, and a large window costs few WINDOW_UPDATEs (one per
 * 128 KiB with a 256 KiB window, not one per 32 KiB). */
static uint64_t stream_threshold(const sl_spdy_session *s)
{
    uint64_t half = (uint64_t)s->recv_window / 2;
    return half ? half : 1;
}

/* The session window is SPDY/3.1's 64 KiB until we announce a larger stream
 * window, which widens it to the same size (announce_window). */
static uint64_t session_threshold(const sl_spdy_session *s)
{
    if (s->recv_window > SL_SPDY_INITIAL_WINDOW)
        return (uint64_t)s->recv_window / 2;
    return SL_SPDY_WINDOW_UPDATE_THRESHOLD;
}

int sl_spdy_credit_session(sl_spdy_session *s, uint64_t n)
{
    s->session_credit += n;
    if (!credit_on(s))
        return SL_OK; /* spdystream never asks for credit */
    /* SPDY/3.1 session window: the Upgrade token promises 3.1, so a peer
     * that uses flow control at all gets session credit too. */
    return send_credit(s, 0, &s->session_credit, session_threshold(s));
}

int sl_spdy_credit_stream(sl_spdy_session *s, sl_spdy_stream *st, uint64_t n)
{
    st->credit += n;
    if (st->in_closed)
        st->credit = 0; /* the peer sends nothing more on it */
    if (!credit_on(s))
        return SL_OK;
    return send_credit(s, st->id, &st->credit, stream_threshold(s));
}

int sl_spdy_stream_consumed(sl_spdy_session *s, uint32_t id, size_t n)
{
    sl_spdy_stream *st = sl_spdy_stream_find(s, id);
    if (!st)
        return SL_ERR_NOTFOUND;
    if (n > st->unconsumed)
        return SL_ERR_INVAL;
    st->unconsumed -= n;
    return sl_spdy_credit_stream(s, st, n);
}

/* Credit held back while nobody used flow control goes out whole: the peer
 * tracked its windows all along, so only then do they match ours. */
static int return_held_credit(sl_spdy_session *s)
{
    for (size_t b = 0; b < s->nbuckets; b++) {
        for (sl_spdy_stream *st = s->table[b]; st; st = st->hnext) {
            int rc = send_credit(s, st->id, &st->credit, 1);
            if (rc != SL_OK)
                return rc;
        }
    }
    return send_credit(s, 0, &s->session_credit, 1);
}

int sl_spdy_session_announce_window(sl_spdy_session *s, uint32_t initial_window)
{
    if (s->dead)
        return s->dead;
    if (initial_window == 0 || initial_window > SL_SPDY_MAX_WINDOW)
        return SL_ERR_INVAL;
    if (s->announced)
        return SL_ERR_STATE;
    const uint32_t e[1][3] = {{0, SL_SPDY_SETTINGS_INITIAL_WINDOW_SIZE, initial_window}};
    int rc = sl_spdy_write_settings(s->out, 0, e, 1);
    if (rc != SL_OK)
        return rc;
    s->announced = true;
    s->recv_window = initial_window;
    /* The session window starts at 64 KiB whatever the stream windows are:
     * widened to one stream window, so a lone stream can use all of its
     * own. It costs no memory: session credit is returned on arrival, and
     * the stream windows bound what the application holds. */
    if (initial_window > SL_SPDY_INITIAL_WINDOW) {
        rc = sl_spdy_write_window_update(s->out, 0, initial_window - SL_SPDY_INITIAL_WINDOW);
        if (rc != SL_OK)
            return rc;
    }
    return return_held_credit(s);
}

/* ---- opening, replying, resetting ------------------------------------------- */

/* A header block was compressed but its frame could not be queued (or zlib
 * failed): the peer's context can no longer follow ours. */
static int sending_broken(sl_spdy_session *s, int err)
{
    if (!s->goaway_sent) {
        s->goaway_sent = true;
        sl_spdy_write_goaway(s->out, sl_spdy_session_last_good_id(s),
                             SL_SPDY_GOAWAY_INTERNAL_ERROR);
    }
    s->dead = err;
    return err;
}

static int encode_headers(sl_spdy_session *s, const sl_spdy_nv *nv, size_t n, const uint8_t **b,
                          size_t *blen)
{
    int rc = sl_spdy_nv_compress(&s->def, nv, n, b, blen);
    if (rc != SL_OK && s->def.broken)
        return sending_broken(s, rc);
    return rc;
}

int sl_spdy_stream_open(sl_spdy_session *s, const sl_spdy_nv *nv, size_t n, bool fin, uint32_t *id)
{
    if (s->dead)
        return s->dead;
    if (s->goaway_sent || s->goaway_recv)
        return SL_ERR_CLOSED;
    if (s->next_local_id > SL_SPDY_MAX_STREAM_ID || s->nlocal >= s->peer_max_streams)
        return SL_ERR_FULL;
    sl_spdy_stream *st = sl_spdy_stream_new(s, s->next_local_id, true);
    if (!st)
        return SL_ERR_NOMEM;
    const uint8_t *b;
    size_t blen;
    int rc = encode_headers(s, nv, n, &b, &blen);
    if (rc == SL_OK) {
        rc = sl_spdy_write_syn_stream(s->out, st->id, 0, 0, fin ? SL_SPDY_FLAG_FIN : 0, b, blen);
        if (rc != SL_OK)
            rc = sending_broken(s, rc);
    }
    if (rc != SL_OK) {
        free(st);
        return rc;
    }
    st->out_closed = fin;
    sl_spdy_stream_link(s, st);
    s->next_local_id += 2;
    if (id)
        *id = st->id;
    return SL_OK;
}

int sl_spdy_stream_reply(sl_spdy_session *s, uint32_t id, const sl_spdy_nv *nv, size_t n, bool fin)
{
    if (s->dead)
        return s->dead;
    sl_spdy_stream *st = sl_spdy_stream_find(s, id);
    if (!st)
        return SL_ERR_NOTFOUND;
    if (st->local || st->replied)
        return SL_ERR_STATE;
    const uint8_t *b;
    size_t blen;
    int rc = encode_headers(s, nv, n, &b, &blen);
    if (rc != SL_OK)
        return rc;
    rc = sl_spdy_write_syn_reply(s->out, id, fin ? SL_SPDY_FLAG_FIN : 0, b, blen);
    if (rc != SL_OK)
        return sending_broken(s, rc);
    st->replied = true;
    if (fin)
        st->out_closed = true;
    sl_spdy_stream_maybe_done(s, st);
    return SL_OK;
}

int sl_spdy_stream_reset(sl_spdy_session *s, uint32_t id, uint32_t status)
{
    if (status == 0)
        return SL_ERR_INVAL;
    sl_spdy_stream *st = sl_spdy_stream_find(s, id);
    if (!st)
        return SL_ERR_NOTFOUND;
    int rc = sl_spdy_write_rst_stream(s->out, id, status);
    if (rc != SL_OK)
        return rc;
    sl_spdy_remember_reset(s, id);
    sl_spdy_stream_remove(s, st, 0);
    return SL_OK;
}

/* ---- data -------------------------------------------------------------------- */

void sl_spdy_session_set_direct_limit(sl_spdy_session *s, size_t limit)
{
    s->direct_limit = limit;
}

/* Nothing queued ahead on this stream: frames go straight to out while it
 * is below the direct limit. Returns how many bytes left that way. */
static size_t send_direct(sl_spdy_session *s, sl_spdy_stream *st, const uint8_t *data, size_t len)
{
    size_t done = 0;
    while (done < len && sl_bufq_len(s->out) < s->direct_limit) {
        size_t n = len - done;
        if (n > SL_SPDY_MAX_DATA_FRAME)
            n = SL_SPDY_MAX_DATA_FRAME;
        n = window_room(s, st, n);
        if (n == 0 || sl_spdy_write_data(s->out, st->id, 0, data + done, n) != SL_OK)
            break;
        st->send_window -= (int64_t)n;
        s->send_window -= (int64_t)n;
        done += n;
    }
    return done;
}

int sl_spdy_stream_send(sl_spdy_session *s, uint32_t id, const uint8_t *data, size_t len, bool fin)
{
    if (s->dead)
        return s->dead;
    sl_spdy_stream *st = sl_spdy_stream_find(s, id);
    if (!st)
        return SL_ERR_NOTFOUND;
    if (st->fin_queued || st->out_closed || (!st->local && !st->replied))
        return SL_ERR_STATE;
    if (len && s->direct_limit && st->replied && sl_bufq_len(&st->oq) == 0) {
        size_t done = send_direct(s, st, data, len);
        data += done;
        len -= done;
    }
    if (len && sl_bufq_append(&st->oq, data, len) != SL_OK)
        return SL_ERR_NOMEM;
    if (fin)
        st->fin_queued = true;
    if (has_work(st))
        enqueue(s, st);
    return SL_OK;
}

int sl_spdy_stream_close(sl_spdy_session *s, uint32_t id)
{
    return sl_spdy_stream_send(s, id, NULL, 0, true);
}

size_t sl_spdy_stream_pending(const sl_spdy_session *s, uint32_t id)
{
    const sl_spdy_stream *st = sl_spdy_stream_find(s, id);
    return st ? sl_bufq_len(&st->oq) : 0;
}

/* ---- session ------------------------------------------------------------------- */

int sl_spdy_ping(sl_spdy_session *s, uint32_t *id)
{
    if (s->dead)
        return s->dead;
    uint32_t pid = s->next_ping_id;
    int rc = sl_spdy_write_ping(s->out, pid);
    if (rc != SL_OK)
        return rc;
    /* wrap within the 32-bit id space, keeping the parity */
    s->next_ping_id = pid > UINT32_MAX - 2 ? (pid & 1 ? 1 : 2) : pid + 2;
    if (id)
        *id = pid;
    return SL_OK;
}

int sl_spdy_goaway(sl_spdy_session *s, uint32_t status)
{
    if (s->goaway_sent)
        return SL_ERR_STATE;
    int rc = sl_spdy_write_goaway(s->out, sl_spdy_session_last_good_id(s), status);
    if (rc != SL_OK)
        return rc;
    s->goaway_sent = true;
    return SL_OK;
}
