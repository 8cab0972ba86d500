#include "spdy/spdy_frame.h"

#include <stdlib.h>
#include <string.h>

#include "sluice/error.h"

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint32_t get31(const uint8_t *p)
{
    return get32(p) & SL_SPDY_MAX_STREAM_ID;
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

void sl_spdy_hdr_decode(const uint8_t b[SL_SPDY_FRAME_HEADER_LEN], sl_spdy_frame_hdr *h)
{
    memset(h, 0, sizeof(*h));
    h->control = (b[0] & 0x80) != 0;
    if (h->control) {
        h->version = (uint16_t)((b[0] & 0x7f) << 8 | b[1]);
        h->type = (uint16_t)(b[2] << 8 | b[3]);
    } else {
        h->stream_id = get31(b);
    }
    h->flags = b[4];
    h->length = (uint32_t)b[5] << 16 | (uint32_t)b[6] << 8 | b[7];
}

static bool known_type(uint16_t t)
{
    return (t >= SL_SPDY_SYN_STREAM && t <= SL_SPDY_SETTINGS) ||
           (t >= SL_SPDY_PING && t <= SL_SPDY_WINDOW_UPDATE);
}

/* ---- reader ------------------------------------------------------------ */

void sl_spdy_reader_init(sl_spdy_reader *r, uint32_t max_data, uint32_t max_control)
{
    memset(r, 0, sizeof(*r));
    r->state = SL_SPDY_R_HEADER;
    r->max_data = max_data > SL_SPDY_MAX_LENGTH ? SL_SPDY_MAX_LENGTH : max_data;
    r->max_control = max_control > SL_SPDY_MAX_LENGTH ? SL_SPDY_MAX_LENGTH : max_control;
}

void sl_spdy_reader_fini(sl_spdy_reader *r)
{
    free(r->buf);
    r->buf = NULL;
    r->bcap = r->blen = 0;
}

static int fail(sl_spdy_reader *r, int err)
{
    r->state = SL_SPDY_R_FAILED;
    r->err = err;
    return err;
}

/* The header is complete: decide what the payload is. Returns 1 when the
 * header itself produces an event, 0 to go on reading, <0 on error. */
static int start_frame(sl_spdy_reader *r, sl_spdy_event *ev)
{
    sl_spdy_frame_hdr *h = &r->cur;
    sl_spdy_hdr_decode(r->hbuf, h);
    r->hhave = 0;
    r->remaining = h->length;
    ev->hdr = *h;
    ev->data = NULL;
    ev->len = 0;
    if (!h->control) {
        if (h->length > r->max_data)
            return fail(r, SL_ERR_TOO_LARGE);
        r->state = h->length ? SL_SPDY_R_DATA : SL_SPDY_R_DATA_END;
        ev->type = SL_SPDY_EV_DATA_BEGIN;
        return 1;
    }
    if (h->version != SL_SPDY_VERSION)
        return fail(r, SL_ERR_UNSUPPORTED);
    if (!known_type(h->type)) {
        r->state = h->length ? SL_SPDY_R_SKIP : SL_SPDY_R_HEADER;
        ev->type = SL_SPDY_EV_UNKNOWN;
        return 1;
    }
    if (h->length > r->max_control)
        return fail(r, SL_ERR_TOO_LARGE);
    r->blen = 0;
    if (h->length == 0) {
        r->state = SL_SPDY_R_HEADER;
        ev->type = SL_SPDY_EV_CONTROL;
        return 1;
    }
    r->state = SL_SPDY_R_CONTROL;
    return 0;
}

static int read_header(sl_spdy_reader *r, const uint8_t *p, size_t avail, size_t *off,
                       sl_spdy_event *ev)
{
    size_t n = SL_SPDY_FRAME_HEADER_LEN - r->hhave;
    if (n > avail)
        n = avail;
    memcpy(r->hbuf + r->hhave, p, n);
    r->hhave += n;
    *off += n;
    if (r->hhave < SL_SPDY_FRAME_HEADER_LEN)
        return 0;
    return start_frame(r, ev);
}

static int read_control(sl_spdy_reader *r, const uint8_t *p, size_t avail, size_t *off,
                        sl_spdy_event *ev)
{
    ev->hdr = r->cur;
    ev->type = SL_SPDY_EV_CONTROL;
    if (r->blen == 0 && avail >= r->remaining) {
        /* whole payload in the caller's input: hand it out without a copy */
        ev->data = p;
        ev->len = r->remaining;
        *off += r->remaining;
        r->state = SL_SPDY_R_HEADER;
        return 1;
    }
    if (r->bcap < r->cur.length) {
        uint8_t *nb = realloc(r->buf, r->cur.length);
        if (!nb)
            return fail(r, SL_ERR_NOMEM);
        r->buf = nb;
        r->bcap = r->cur.length;
    }
    size_t n = avail < r->remaining ? avail : r->remaining;
    memcpy(r->buf + r->blen, p, n);
    r->blen += n;
    r->remaining -= (uint32_t)n;
    *off += n;
    if (r->remaining)
        return 0;
    ev->data = r->buf;
    ev->len = r->blen;
    r->state = SL_SPDY_R_HEADER;
    return 1;
}

static int read_data(sl_spdy_reader *r, const uint8_t *p, size_t avail, size_t *off,
                     sl_spdy_event *ev)
{
    size_t n = avail < r->remaining ? avail : r->remaining;
    ev->hdr = r->cur;
    ev->type = SL_SPDY_EV_DATA;
    ev->data = p;
    ev->len = n;
    r->remaining -= (uint32_t)n;
    *off += n;
    if (!r->remaining)
        r->state = SL_SPDY_R_DATA_END;
    return 1;
}

int sl_spdy_reader_next(sl_spdy_reader *r, const uint8_t *data, size_t len, size_t *used,
                        sl_spdy_event *ev)
{
    size_t off = 0;
    int rc = 0;
    *used = 0;
    while (rc == 0) {
        size_t avail = len - off;
        const uint8_t *p = data + off;
        switch (r->state) {
        case SL_SPDY_R_FAILED:
            return r->err;
        case SL_SPDY_R_DATA_END:
            ev->hdr = r->cur;
            ev->type = SL_SPDY_EV_DATA_END;
            ev->data = NULL;
            ev->len = 0;
            r->state = SL_SPDY_R_HEADER;
            rc = 1;
            continue;
        default:
            break;
        }
        if (avail == 0)
            break;
        switch (r->state) {
        case SL_SPDY_R_HEADER:
            rc = read_header(r, p, avail, &off, ev);
            break;
        case SL_SPDY_R_CONTROL:
            rc = read_control(r, p, avail, &off, ev);
            break;
        case SL_SPDY_R_DATA:
            rc = read_data(r, p, avail, &off, ev);
            break;
        default: { /* SL_SPDY_R_SKIP */
            size_t n = avail < r->remaining ? avail : r->remaining;
            r->remaining -= (uint32_t)n;
            off += n;
            if (!r->remaining)
                r->state = SL_SPDY_R_HEADER;
            break;
        }
        }
    }
    *used = off;
    return rc;
}

/* ---- control payloads ---------------------------------------------------- */

static int parse_stream_frame(const uint8_t *p, size_t len, size_t fixed, sl_spdy_ctrl *c)
{
    if (len < fixed)
        return SL_ERR_PROTO;
    c->stream_id = get31(p);
    if (c->stream_id == 0)
        return SL_ERR_PROTO;
    c->nv = p + fixed;
    c->nv_len = len - fixed;
    return SL_OK;
}

static int parse_fixed8(const sl_spdy_frame_hdr *h, const uint8_t *p, size_t len, sl_spdy_ctrl *c)
{
    if (len != 8 || h->flags != 0)
        return SL_ERR_PROTO;
    c->stream_id = get31(p);
    if (h->type == SL_SPDY_WINDOW_UPDATE)
        c->value = get31(p + 4);
    else
        c->status = get32(p + 4);
    return SL_OK;
}

int sl_spdy_ctrl_parse(const sl_spdy_frame_hdr *h, const uint8_t *p, size_t len, sl_spdy_ctrl *c)
{
    memset(c, 0, sizeof(*c));
    c->type = h->type;
    c->flags = h->flags;
    switch (h->type) {
    case SL_SPDY_SYN_STREAM:
        if (parse_stream_frame(p, len, 10, c))
            return SL_ERR_PROTO;
        c->assoc_id = get31(p + 4);
        c->priority = p[8] >> 5;
        c->slot = p[9];
        return SL_OK;
    case SL_SPDY_SYN_REPLY:
    case SL_SPDY_HEADERS:
        return parse_stream_frame(p, len, 4, c);
    case SL_SPDY_RST_STREAM:
        if (len != 8)
            return SL_ERR_PROTO;
        c->stream_id = get31(p);
        c->status = get32(p + 4);
        return (c->stream_id == 0 || c->status == 0) ? SL_ERR_PROTO : SL_OK;
    case SL_SPDY_SETTINGS:
        if (len < 4)
            return SL_ERR_PROTO;
        c->count = get32(p);
        if (c->count > (len - 4) / 8 || 4 + (size_t)c->count * 8 != len)
            return SL_ERR_PROTO;
        c->nv = p + 4;
        c->nv_len = len - 4;
        return SL_OK;
    case SL_SPDY_PING:
        if (len != 4 || h->flags != 0)
            return SL_ERR_PROTO;
        c->value = get32(p);
        return c->value == 0 ? SL_ERR_PROTO : SL_OK;
    case SL_SPDY_GOAWAY:
    case SL_SPDY_WINDOW_UPDATE:
        return parse_fixed8(h, p, len, c);
    default:
        return SL_ERR_UNSUPPORTED;
    }
}

void sl_spdy_settings_entry(const sl_spdy_ctrl *c, uint32_t i, uint8_t *flags, uint32_t *id,
                            uint32_t *value)
{
    const uint8_t *e = c->nv + (size_t)i * 8;
    *flags = e[0];
    *id = (uint32_t)e[1] << 16 | (uint32_t)e[2] << 8 | e[3];
    *value = get32(e + 4);
}

/* ---- writers ------------------------------------------------------------- */

/* Reserves room for a whole frame so that it is queued atomically. */
static uint8_t *frame_begin(sl_bufq *out, size_t total)
{
    size_t avail;
    return sl_bufq_reserve(out, total, &avail);
}

static void put_ctrl_hdr(uint8_t *p, uint16_t type, uint8_t flags, size_t len)
{
    p[0] = 0x80;
    p[1] = SL_SPDY_VERSION;
    p[2] = (uint8_t)(type >> 8);
    p[3] = (uint8_t)type;
    put32(p + 4, (uint32_t)len);
    p[4] = flags;
}

static int write_ctrl(sl_bufq *out, uint16_t type, uint8_t flags, const uint8_t *fixed,
                      size_t fixed_len, const uint8_t *block, size_t block_len)
{
    if (block_len > SL_SPDY_MAX_LENGTH - fixed_len)
        return SL_ERR_INVAL;
    size_t len = fixed_len + block_len;
    uint8_t *p = frame_begin(out, SL_SPDY_FRAME_HEADER_LEN + len);
    if (!p)
        return SL_ERR_NOMEM;
    put_ctrl_hdr(p, type, flags, len);
    memcpy(p + SL_SPDY_FRAME_HEADER_LEN, fixed, fixed_len);
    if (block_len)
        memcpy(p + SL_SPDY_FRAME_HEADER_LEN + fixed_len, block, block_len);
    sl_bufq_commit(out, SL_SPDY_FRAME_HEADER_LEN + len);
    return SL_OK;
}

static bool bad_id(uint32_t id)
{
    return id == 0 || id > SL_SPDY_MAX_STREAM_ID;
}

int sl_spdy_write_syn_stream(sl_bufq *out, uint32_t id, uint32_t assoc_id, uint8_t priority,
                             uint8_t flags, const uint8_t *block, size_t block_len)
{
    if (bad_id(id) || assoc_id > SL_SPDY_MAX_STREAM_ID || priority > 7)
        return SL_ERR_INVAL;
    uint8_t f[10];
    put32(f, id);
    put32(f + 4, assoc_id);
    f[8] = (uint8_t)(priority << 5);
    f[9] = 0;
    return write_ctrl(out, SL_SPDY_SYN_STREAM, flags, f, sizeof(f), block, block_len);
}

int sl_spdy_write_syn_reply(sl_bufq *out, uint32_t id, uint8_t flags, const uint8_t *block,
                            size_t block_len)
{
    if (bad_id(id))
        return SL_ERR_INVAL;
    uint8_t f[4];
    put32(f, id);
    return write_ctrl(out, SL_SPDY_SYN_REPLY, flags, f, sizeof(f), block, block_len);
}

int sl_spdy_write_headers(sl_bufq *out, uint32_t id, uint8_t flags, const uint8_t *block,
                          size_t block_len)
{
    if (bad_id(id))
        return SL_ERR_INVAL;
    uint8_t f[4];
    put32(f, id);
    return write_ctrl(out, SL_SPDY_HEADERS, flags, f, sizeof(f), block, block_len);
}

static int write_two(sl_bufq *out, uint16_t type, uint32_t a, uint32_t b)
{
    uint8_t f[8];
    put32(f, a);
    put32(f + 4, b);
    return write_ctrl(out, type, 0, f, sizeof(f), NULL, 0);
}

int sl_spdy_write_rst_stream(sl_bufq *out, uint32_t id, uint32_t status)
{
    if (bad_id(id) || status == 0)
        return SL_ERR_INVAL;
    return write_two(out, SL_SPDY_RST_STREAM, id, status);
}

int sl_spdy_write_settings(sl_bufq *out, uint8_t flags, const uint32_t (*entries)[3], size_t n)
{
    if (n > (SL_SPDY_MAX_LENGTH - 4) / 8)
        return SL_ERR_INVAL;
    size_t len = 4 + 8 * n;
    uint8_t *p = frame_begin(out, SL_SPDY_FRAME_HEADER_LEN + len);
    if (!p)
        return SL_ERR_NOMEM;
    put_ctrl_hdr(p, SL_SPDY_SETTINGS, flags, len);
    put32(p + 8, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        uint8_t *e = p + 12 + 8 * i;
        put32(e, entries[i][1] & 0xFFFFFFu);
        e[0] = (uint8_t)entries[i][0];
        put32(e + 4, entries[i][2]);
    }
    sl_bufq_commit(out, SL_SPDY_FRAME_HEADER_LEN + len);
    return SL_OK;
}

int sl_spdy_write_ping(sl_bufq *out, uint32_t id)
{
    if (id == 0)
        return SL_ERR_INVAL;
    uint8_t f[4];
    put32(f, id);
    return write_ctrl(out, SL_SPDY_PING, 0, f, sizeof(f), NULL, 0);
}

int sl_spdy_write_goaway(sl_bufq *out, uint32_t last_good_id, uint32_t status)
{
    if (last_good_id > SL_SPDY_MAX_STREAM_ID)
        return SL_ERR_INVAL;
    return write_two(out, SL_SPDY_GOAWAY, last_good_id, status);
}

int sl_spdy_write_window_update(sl_bufq *out, uint32_t id, uint32_t delta)
{
    if (id > SL_SPDY_MAX_STREAM_ID || delta == 0 || delta > SL_SPDY_MAX_WINDOW)
        return SL_ERR_INVAL;
    return write_two(out, SL_SPDY_WINDOW_UPDATE, id, delta);
}

static uint8_t *data_begin(sl_bufq *out, uint32_t id, uint8_t flags, size_t len)
{
    if (bad_id(id) || len > SL_SPDY_MAX_LENGTH)
        return NULL;
    uint8_t *p = frame_begin(out, SL_SPDY_FRAME_HEADER_LEN + len);
    if (!p)
        return NULL;
    put32(p, id);
    put32(p + 4, (uint32_t)len);
    p[4] = flags;
    return p;
}

int sl_spdy_write_data(sl_bufq *out, uint32_t id, uint8_t flags, const uint8_t *data, size_t len)
{
    if (bad_id(id) || len > SL_SPDY_MAX_LENGTH)
        return SL_ERR_INVAL;
    uint8_t *p = data_begin(out, id, flags, len);
    if (!p)
        return SL_ERR_NOMEM;
    if (len)
        memcpy(p + SL_SPDY_FRAME_HEADER_LEN, data, len);
    sl_bufq_commit(out, SL_SPDY_FRAME_HEADER_LEN + len);
    return SL_OK;
}

int sl_spdy_write_data_from(sl_bufq *out, uint32_t id, uint8_t flags, sl_bufq *src, size_t len)
{
    if (bad_id(id) || len > SL_SPDY_MAX_LENGTH || len > sl_bufq_len(src))
        return SL_ERR_INVAL;
    uint8_t *p = data_begin(out, id, flags, len);
    if (!p)
        return SL_ERR_NOMEM;
    sl_bufq_copyout(src, p + SL_SPDY_FRAME_HEADER_LEN, len);
    sl_bufq_consume(src, len);
    sl_bufq_commit(out, SL_SPDY_FRAME_HEADER_LEN + len);
    return SL_OK;
}
