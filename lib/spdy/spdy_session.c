/* Session core and the inbound half: stream table, frame dispatch, peer
 * error handling. The outbound half is in spdy_submit.c. */
#include "spdy/spdy_session_int.h"

#include <stdlib.h>
#include <string.h>

#include "sluice/error.h"

void sl_spdy_limits_default(sl_spdy_limits *l)
{
    l->max_data_payload = SL_SPDY_DEFAULT_MAX_DATA_PAYLOAD;
    l->max_control_payload = SL_SPDY_DEFAULT_MAX_CONTROL_PAYLOAD;
    l->max_header_block = SL_SPDY_DEFAULT_MAX_HEADER_BLOCK;
    l->max_header_pairs = SL_SPDY_DEFAULT_MAX_HEADER_PAIRS;
    l->max_streams = SL_SPDY_DEFAULT_MAX_STREAMS;
    l->initial_window = SL_SPDY_INITIAL_WINDOW;
}

static void apply_limits(sl_spdy_limits *dst, const sl_spdy_limits *src)
{
    sl_spdy_limits_default(dst);
    if (!src)
        return;
    if (src->max_data_payload)
        dst->max_data_payload = src->max_data_payload;
    if (src->max_control_payload)
        dst->max_control_payload = src->max_control_payload;
    if (src->max_header_block)
        dst->max_header_block = src->max_header_block;
    if (src->max_header_pairs)
        dst->max_header_pairs = src->max_header_pairs;
    if (src->max_streams)
        dst->max_streams = src->max_streams;
    if (src->initial_window && src->initial_window <= SL_SPDY_MAX_WINDOW)
        dst->initial_window = src->initial_window;
}

sl_spdy_session *sl_spdy_session_new(sl_spdy_role role, const sl_spdy_callbacks *cb, void *arg,
                                     sl_bufq *out, const sl_spdy_limits *limits)
{
    sl_spdy_session *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->role = role;
    if (cb)
        s->cb = *cb;
    s->arg = arg;
    s->out = out;
    apply_limits(&s->lim, limits);
    sl_spdy_reader_init(&s->rd, s->lim.max_data_payload, s->lim.max_control_payload);
    if (sl_spdy_deflater_init(&s->def) != SL_OK) {
        free(s);
        return NULL;
    }
    if (sl_spdy_inflater_init(&s->inf, s->lim.max_header_block) != SL_OK) {
        sl_spdy_deflater_fini(&s->def);
        free(s);
        return NULL;
    }
    s->next_local_id = role == SL_SPDY_CLIENT ? 1 : 2;
    s->next_remote_id = role == SL_SPDY_CLIENT ? 2 : 1;
    s->next_ping_id = role == SL_SPDY_CLIENT ? 1 : 2;
    s->peer_initial_window = SL_SPDY_INITIAL_WINDOW;
    s->send_window = SL_SPDY_INITIAL_WINDOW;
    s->recv_window = s->lim.initial_window;
    s->peer_max_streams = UINT32_MAX;
    s->table = s->small;
    s->nbuckets = STREAM_BUCKETS_MIN;
    return s;
}

void sl_spdy_session_free(sl_spdy_session *s)
{
    if (!s)
        return;
    for (size_t b = 0; b < s->nbuckets; b++) {
        sl_spdy_stream *st = s->table[b];
        while (st) {
            sl_spdy_stream *next = st->hnext;
            sl_bufq_fini(&st->oq);
            free(st);
            st = next;
        }
    }
    if (s->table != s->small)
        free(s->table);
    sl_spdy_reader_fini(&s->rd);
    sl_spdy_deflater_fini(&s->def);
    sl_spdy_inflater_fini(&s->inf);
    free(s);
}

/* ---- stream table ---------------------------------------------------------- */

static size_t bucket(const sl_spdy_session *s, uint32_t id)
{
    return (id >> 1) & (s->nbuckets - 1);
}

/* Four times the buckets (STREAM_BUCKETS_MAX at most); on no memory the
 * table stays as it is (chains only get longer). */
static void grow_table(sl_spdy_session *s)
{
    size_t n = s->nbuckets * 4;
    if (n > STREAM_BUCKETS_MAX)
        n = STREAM_BUCKETS_MAX;
    sl_spdy_stream **t = calloc(n, sizeof(*t));
    if (!t)
        return;
    sl_spdy_stream **old = s->table;
    size_t oldn = s->nbuckets;
    s->table = t;
    s->nbuckets = n;
    for (size_t b = 0; b < oldn; b++) {
        for (sl_spdy_stream *st = old[b], *next; st; st = next) {
            next = st->hnext;
            st->hnext = t[bucket(s, st->id)];
            t[bucket(s, st->id)] = st;
        }
    }
    if (old != s->small)
        free(old);
}

sl_spdy_stream *sl_spdy_stream_find(const sl_spdy_session *s, uint32_t id)
{
    for (sl_spdy_stream *st = s->table[bucket(s, id)]; st; st = st->hnext)
        if (st->id == id)
            return st;
    return NULL;
}

sl_spdy_stream *sl_spdy_stream_new(const sl_spdy_session *s, uint32_t id, bool local)
{
    sl_spdy_stream *st = calloc(1, sizeof(*st));
    if (!st)
        return NULL;
    st->id = id;
    st->local = local;
    st->send_window = s->peer_initial_window;
    sl_bufq_init(&st->oq);
    return st;
}

void sl_spdy_stream_link(sl_spdy_session *s, sl_spdy_stream *st)
{
    uint32_t id = st->id;
    st->hnext = s->table[bucket(s, id)];
    s->table[bucket(s, id)] = st;
    s->nstreams++;
    if (s->nstreams > 2 * s->nbuckets && s->nbuckets < STREAM_BUCKETS_MAX)
        grow_table(s);
    if (st->local)
        s->nlocal++;
    else
        s->nremote++;
}

void sl_spdy_stream_remove(sl_spdy_session *s, sl_spdy_stream *st, uint32_t reset_status)
{
    uint32_t id = st->id;
    sl_spdy_stream **pp = &s->table[bucket(s, id)];
    while (*pp != st)
        pp = &(*pp)->hnext;
    *pp = st->hnext;
    sl_spdy_unqueue(s, st);
    s->nstreams--;
    if (st->local)
        s->nlocal--;
    else
        s->nremote--;
    /* its unconsumed bytes were session credit on arrival already */
    sl_bufq_fini(&st->oq);
    free(st);
    if (reset_status && s->cb.on_reset)
        s->cb.on_reset(s->arg, id, reset_status);
    if (s->cb.on_stream_close)
        s->cb.on_stream_close(s->arg, id);
}

bool sl_spdy_stream_maybe_done(sl_spdy_session *s, sl_spdy_stream *st)
{
    if (!st->in_closed || !st->out_closed)
        return false;
    sl_spdy_stream_remove(s, st, 0);
    return true;
}

void sl_spdy_remember_reset(sl_spdy_session *s, uint32_t id)
{
    s->reset_ids[s->reset_pos] = id;
    s->reset_pos = (s->reset_pos + 1) % SL_SPDY_RESET_MEMORY;
}

static bool was_reset(const sl_spdy_session *s, uint32_t id)
{
    for (size_t i = 0; i < SL_SPDY_RESET_MEMORY; i++)
        if (s->reset_ids[i] == id)
            return true;
    return false;
}

/* ---- peer errors --------------------------------------------------------- */

/* Session error: GOAWAY(PROTOCOL_ERROR) unless one was sent, then dead. */
static int fatal(sl_spdy_session *s, int err)
{
    if (!s->goaway_sent) {
        s->goaway_sent = true;
        sl_spdy_write_goaway(s->out, sl_spdy_session_last_good_id(s),
                             SL_SPDY_GOAWAY_PROTOCOL_ERROR);
    }
    s->dead = err;
    return err;
}

/* Stream error: RST_STREAM(status); the stream, if known, is removed and
 * reported. Returns SL_OK or SL_ERR_NOMEM. */
static int stream_error(sl_spdy_session *s, uint32_t id, uint32_t status)
{
    int rc = sl_spdy_write_rst_stream(s->out, id, status);
    if (rc != SL_OK)
        return rc;
    sl_spdy_remember_reset(s, id);
    sl_spdy_stream *st = sl_spdy_stream_find(s, id);
    if (st)
        sl_spdy_stream_remove(s, st, status);
    return SL_OK;
}

/* ---- control frames -------------------------------------------------------- */

/* Inflates a frame's header block. Every block goes through the shared
 * context, even for frames we then refuse. Returns SL_OK, a fatal error
 * (context broken: SL_ERR_COMPRESSION, SL_ERR_TOO_LARGE, SL_ERR_PROTO for a
 * truncated NV block, SL_ERR_NOMEM), or *nv_err set to the per-frame parse
 * error. */
static int decode_block(sl_spdy_session *s, const sl_spdy_ctrl *c, const sl_spdy_nv **nv, size_t *n,
                        int *nv_err)
{
    *nv_err = sl_spdy_nv_decode(&s->inf, c->nv, c->nv_len, s->lim.max_header_pairs, nv, n);
    if (*nv_err == SL_OK)
        return SL_OK;
    if (sl_spdy_inflater_broken(&s->inf) || *nv_err == SL_ERR_NOMEM)
        return fatal(s, *nv_err);
    return SL_OK;
}

static bool remote_id_ok(const sl_spdy_session *s, uint32_t id)
{
    bool odd = (id & 1) != 0;
    bool want_odd = s->role == SL_SPDY_SERVER;
    return odd == want_odd && id >= s->next_remote_id;
}

static int on_syn_stream(sl_spdy_session *s, const sl_spdy_ctrl *c)
{
    const sl_spdy_nv *nv;
    size_t n;
    int nv_err;
    int rc = decode_block(s, c, &nv, &n, &nv_err);
    if (rc != SL_OK)
        return rc;
    if (!remote_id_ok(s, c->stream_id))
        return stream_error(s, c->stream_id, SL_SPDY_PROTOCOL_ERROR);
    s->next_remote_id = c->stream_id + 2;
    if (nv_err != SL_OK)
        return stream_error(s, c->stream_id, SL_SPDY_PROTOCOL_ERROR);
    if (s->goaway_sent || s->nremote >= s->lim.max_streams || !s->cb.on_stream_open)
        return stream_error(s, c->stream_id, SL_SPDY_REFUSED_STREAM);
    sl_spdy_stream *st = sl_spdy_stream_new(s, c->stream_id, false);
    if (!st)
        return stream_error(s, c->stream_id, SL_SPDY_INTERNAL_ERROR);
    sl_spdy_stream_link(s, st);
    bool fin = c->flags & SL_SPDY_FLAG_FIN;
    bool uni = c->flags & SL_SPDY_FLAG_UNIDIRECTIONAL;
    st->in_closed = fin;
    st->out_closed = uni;
    uint32_t id = st->id;
    s->cb.on_stream_open(s->arg, id, nv, n, fin, uni);
    st = sl_spdy_stream_find(s, id); /* the callback may have reset it */
    if (st)
        sl_spdy_stream_maybe_done(s, st);
    return SL_OK;
}

/* Shared tail of SYN_REPLY and HEADERS: FIN handling after the callback. */
static void peer_fin(sl_spdy_session *s, uint32_t id)
{
    sl_spdy_stream *st = sl_spdy_stream_find(s, id);
    if (!st || st->in_closed)
        return;
    st->in_closed = true;
    if (s->cb.on_fin)
        s->cb.on_fin(s->arg, id);
    st = sl_spdy_stream_find(s, id);
    if (st)
        sl_spdy_stream_maybe_done(s, st);
}

static int on_syn_reply(sl_spdy_session *s, const sl_spdy_ctrl *c)
{
    const sl_spdy_nv *nv;
    size_t n;
    int nv_err;
    int rc = decode_block(s, c, &nv, &n, &nv_err);
    if (rc != SL_OK)
        return rc;
    uint32_t id = c->stream_id;
    sl_spdy_stream *st = sl_spdy_stream_find(s, id);
    if (!st)
        return was_reset(s, id) ? SL_OK : stream_error(s, id, SL_SPDY_INVALID_STREAM);
    if (!st->local)
        return stream_error(s, id, SL_SPDY_PROTOCOL_ERROR);
    if (st->replied)
        return stream_error(s, id, SL_SPDY_STREAM_IN_USE);
    if (nv_err != SL_OK)
        return stream_error(s, id, SL_SPDY_PROTOCOL_ERROR);
    st->replied = true;
    /* A peer that uses our announced window answers our SETTINGS at once,
     * before any reply (ours does). One that replies without it is
     * spdystream, which ignores windows: credit for it would only be bytes
     * it may never read, and bytes reaching a socket it closed come back
     * as a RST that destroys what we have not read yet. */
    if (s->announced && !s->peer_fc)
        s->peer_silent = true;
    if (s->cb.on_reply)
        s->cb.on_reply(s->arg, id, nv, n);
    if (c->flags & SL_SPDY_FLAG_FIN)
        peer_fin(s, id);
    return SL_OK;
}

static int on_headers(sl_spdy_session *s, const sl_spdy_ctrl *c)
{
    const sl_spdy_nv *nv;
    size_t n;
    int nv_err;
    int rc = decode_block(s, c, &nv, &n, &nv_err);
    if (rc != SL_OK)
        return rc;
    uint32_t id = c->stream_id;
    sl_spdy_stream *st = sl_spdy_stream_find(s, id);
    if (!st)
        return was_reset(s, id) ? SL_OK : stream_error(s, id, SL_SPDY_INVALID_STREAM);
    if (st->in_closed)
        return stream_error(s, id, SL_SPDY_STREAM_ALREADY_CLOSED);
    if (nv_err != SL_OK)
        return stream_error(s, id, SL_SPDY_PROTOCOL_ERROR);
    if (s->cb.on_headers)
        s->cb.on_headers(s->arg, id, nv, n);
    if (c->flags & SL_SPDY_FLAG_FIN)
        peer_fin(s, id);
    return SL_OK;
}

static int on_rst_stream(sl_spdy_session *s, const sl_spdy_ctrl *c)
{
    sl_spdy_stream *st = sl_spdy_stream_find(s, c->stream_id);
    if (st)
        sl_spdy_stream_remove(s, st, c->status);
    return SL_OK;
}

static int set_initial_window(sl_spdy_session *s, uint32_t value)
{
    if (value > SL_SPDY_MAX_WINDOW)
        return fatal(s, SL_ERR_PROTO);
    int64_t delta = (int64_t)value - s->peer_initial_window;
    s->peer_initial_window = value;
    s->peer_fc = true;
    if (delta > 0)
        s->grants++;
    for (size_t b = 0; b < s->nbuckets; b++)
        for (sl_spdy_stream *st = s->table[b]; st; st = st->hnext)
            st->send_window += delta;
    /* The peer announced: answer with ours, so it knows at once that we
     * enforce our windows too (it may not overrun them before our first
     * WINDOW_UPDATE). Never sent to a peer that did not announce. */
    if (!s->announced)
        return sl_spdy_session_announce_window(s, (uint32_t)s->recv_window);
    return SL_OK;
}

static int on_settings(sl_spdy_session *s, const sl_spdy_ctrl *c)
{
    for (uint32_t i = 0; i < c->count; i++) {
        uint8_t flags;
        uint32_t id, value;
        sl_spdy_settings_entry(c, i, &flags, &id, &value);
        if (id == SL_SPDY_SETTINGS_INITIAL_WINDOW_SIZE) {
            int rc = set_initial_window(s, value);
            if (rc != SL_OK)
                return rc;
        } else if (id == SL_SPDY_SETTINGS_MAX_CONCURRENT_STREAMS) {
            s->peer_max_streams = value;
        }
    }
    return SL_OK;
}

static int on_ping(sl_spdy_session *s, const sl_spdy_ctrl *c)
{
    bool ours = (c->value & 1) == (s->role == SL_SPDY_CLIENT ? 1u : 0u);
    if (!ours)
        return sl_spdy_write_ping(s->out, c->value); /* echo, identical */
    if (s->cb.on_pong)
        s->cb.on_pong(s->arg, c->value);
    return SL_OK;
}

static int on_goaway(sl_spdy_session *s, const sl_spdy_ctrl *c)
{
    s->goaway_recv = true;
    if (s->cb.on_goaway)
        s->cb.on_goaway(s->arg, c->stream_id, c->status);
    /* Our streams above last_id were never processed by the peer. Restart
     * the scan after each removal: callbacks may change the table. */
    for (bool again = true; again;) {
        again = false;
        for (size_t b = 0; b < s->nbuckets && !again; b++) {
            for (sl_spdy_stream *st = s->table[b]; st; st = st->hnext) {
                if (st->local && st->id > c->stream_id) {
                    sl_spdy_stream_remove(s, st, SL_SPDY_REFUSED_STREAM);
                    again = true;
                    break;
                }
            }
        }
    }
    return SL_OK;
}

static int on_window_update(sl_spdy_session *s, const sl_spdy_ctrl *c)
{
    if (c->value == 0)
        return SL_OK;
    s->peer_fc = true;
    if (c->stream_id == 0) {
        s->peer_session_fc = true;
        if (s->send_window + c->value > SL_SPDY_MAX_WINDOW)
            return fatal(s, SL_ERR_PROTO);
        s->send_window += c->value;
        s->grants++;
        return SL_OK;
    }
    sl_spdy_stream *st = sl_spdy_stream_find(s, c->stream_id);
    if (!st)
        return SL_OK;
    if (st->send_window + c->value > SL_SPDY_MAX_WINDOW)
        return stream_error(s, st->id, SL_SPDY_FLOW_CONTROL_ERROR);
    st->send_window += c->value;
    s->grants++;
    return SL_OK;
}

static int on_control(sl_spdy_session *s, const sl_spdy_event *ev)
{
    sl_spdy_ctrl c;
    if (sl_spdy_ctrl_parse(&ev->hdr, ev->data, ev->len, &c) != SL_OK)
        return fatal(s, SL_ERR_PROTO);
    switch (c.type) {
    case SL_SPDY_SYN_STREAM:
        return on_syn_stream(s, &c);
    case SL_SPDY_SYN_REPLY:
        return on_syn_reply(s, &c);
    case SL_SPDY_HEADERS:
        return on_headers(s, &c);
    case SL_SPDY_RST_STREAM:
        return on_rst_stream(s, &c);
    case SL_SPDY_SETTINGS:
        return on_settings(s, &c);
    case SL_SPDY_PING:
        return on_ping(s, &c);
    case SL_SPDY_GOAWAY:
        return on_goaway(s, &c);
    default: /* SL_SPDY_WINDOW_UPDATE; the reader passes known types only */
        return on_window_update(s, &c);
    }
}

/* ---- DATA frames ------------------------------------------------------------- */

static int on_data_begin(sl_spdy_session *s, const sl_spdy_frame_hdr *h)
{
    uint32_t id = h->stream_id;
    s->data_id = id;
    s->data_flags = h->flags;
    s->data_mode = DATA_DROP;
    if (id == 0)
        return fatal(s, SL_ERR_PROTO);
    sl_spdy_stream *st = sl_spdy_stream_find(s, id);
    if (!st)
        return was_reset(s, id) ? SL_OK : stream_error(s, id, SL_SPDY_INVALID_STREAM);
    if (st->in_closed)
        return stream_error(s, id, SL_SPDY_STREAM_ALREADY_CLOSED);
    /* A compliant flow-control peer can have at most our window of bytes
     * received and not yet consumed (credit is returned only for consumed
     * bytes), so this never fires for it. */
    if (s->peer_fc && st->unconsumed + h->length > (uint64_t)s->recv_window)
        return stream_error(s, id, SL_SPDY_FLOW_CONTROL_ERROR);
    s->data_mode = DATA_DELIVER;
    return SL_OK;
}

static int on_data_chunk(sl_spdy_session *s, const uint8_t *p, size_t len)
{
    sl_spdy_stream *st = NULL;
    if (s->data_mode == DATA_DELIVER)
        st = sl_spdy_stream_find(s, s->data_id); /* a callback may have reset it */
    if (st) {
        st->unconsumed += len;
        if (s->cb.on_data)
            s->cb.on_data(s->arg, s->data_id, p, len);
    }
    /* Session credit on arrival, delivered or dropped: the stream windows
     * bound what the application holds, so one stalled stream never takes
     * the session window from the others. */
    return sl_spdy_credit_session(s, len);
}

static int on_data_end(sl_spdy_session *s)
{
    if (s->data_mode == DATA_DELIVER && (s->data_flags & SL_SPDY_FLAG_FIN))
        peer_fin(s, s->data_id);
    return SL_OK;
}

static int dispatch(sl_spdy_session *s, const sl_spdy_event *ev)
{
    switch (ev->type) {
    case SL_SPDY_EV_CONTROL:
        return on_control(s, ev);
    case SL_SPDY_EV_DATA_BEGIN:
        return on_data_begin(s, &ev->hdr);
    case SL_SPDY_EV_DATA:
        return on_data_chunk(s, ev->data, ev->len);
    case SL_SPDY_EV_DATA_END:
        return on_data_end(s);
    default: /* SL_SPDY_EV_UNKNOWN: skipped by the reader */
        return SL_OK;
    }
}

int sl_spdy_session_recv(sl_spdy_session *s, const uint8_t *data, size_t len)
{
    static const uint8_t none[1];
    size_t off = 0;
    if (!data) /* keeps data + off defined */
        data = none, len = 0;
    while (!s->dead) {
        sl_spdy_event ev;
        size_t used;
        int rc = sl_spdy_reader_next(&s->rd, data + off, len - off, &used, &ev);
        off += used;
        if (rc < 0)
            return fatal(s, rc);
        if (rc == 0)
            break;
        rc = dispatch(s, &ev);
        if (rc < 0 && !s->dead)
            return fatal(s, rc); /* SL_ERR_NOMEM while answering */
    }
    return s->dead;
}

bool sl_spdy_session_want_read(const sl_spdy_session *s)
{
    return !s->dead;
}

uint32_t sl_spdy_session_last_good_id(const sl_spdy_session *s)
{
    return s->next_remote_id > 2 ? s->next_remote_id - 2 : 0;
}

size_t sl_spdy_session_num_streams(const sl_spdy_session *s)
{
    return s->nstreams;
}

uint64_t sl_spdy_session_grants(const sl_spdy_session *s)
{
    return s->grants;
}

bool sl_spdy_session_peer_flow_control(const sl_spdy_session *s)
{
    return s->peer_fc;
}
