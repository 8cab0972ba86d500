/* The SPDY test application (spdy_app.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sluice/error.h"
#include "spdy_app.h"

static void evf(app *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void evf(app *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(a->ev + a->evlen, sizeof(a->ev) - a->evlen, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < sizeof(a->ev) - a->evlen);
    a->evlen += (size_t)n;
}

static void log_nv(app *a, const sl_spdy_nv *nv, size_t n)
{
    for (size_t i = 0; i < n; i++)
        evf(a, " %s=%s", nv[i].name, nv[i].value);
}

static void cb_open(void *arg, uint32_t id, const sl_spdy_nv *nv, size_t n, bool fin, bool uni)
{
    app *a = arg;
    evf(a, "open %u%s%s", id, fin ? " fin" : "", uni ? " uni" : "");
    log_nv(a, nv, n);
    evf(a, ";");
    if (a->auto_reply)
        assert_int_equal(sl_spdy_stream_reply(a->s, id, NULL, 0, false), SL_OK);
}

static void cb_reply(void *arg, uint32_t id, const sl_spdy_nv *nv, size_t n)
{
    app *a = arg;
    evf(a, "reply %u", id);
    log_nv(a, nv, n);
    evf(a, ";");
}

static void cb_headers(void *arg, uint32_t id, const sl_spdy_nv *nv, size_t n)
{
    app *a = arg;
    evf(a, "headers %u", id);
    log_nv(a, nv, n);
    evf(a, ";");
}

static void cb_data(void *arg, uint32_t id, const uint8_t *data, size_t len)
{
    app *a = arg;
    assert_true(id < MAXID && len > 0);
    assert_int_equal(sl_bufq_append(&a->rx[id], data, len), SL_OK);
    if (a->auto_consume && !a->stall[id])
        assert_int_equal(sl_spdy_stream_consumed(a->s, id, len), SL_OK);
    if (a->reset_in_data)
        assert_int_equal(sl_spdy_stream_reset(a->s, id, SL_SPDY_CANCEL), SL_OK);
}

static void cb_fin(void *arg, uint32_t id)
{
    evf(arg, "fin %u;", id);
}

static void cb_reset(void *arg, uint32_t id, uint32_t status)
{
    evf(arg, "reset %u %u;", id, status);
}

static void cb_close(void *arg, uint32_t id)
{
    evf(arg, "close %u;", id);
}

static void cb_goaway(void *arg, uint32_t last, uint32_t status)
{
    evf(arg, "goaway %u %u;", last, status);
}

static void cb_pong(void *arg, uint32_t id)
{
    evf(arg, "pong %u;", id);
}

static const sl_spdy_callbacks callbacks = {
    .on_stream_open = cb_open,
    .on_reply = cb_reply,
    .on_headers = cb_headers,
    .on_data = cb_data,
    .on_fin = cb_fin,
    .on_reset = cb_reset,
    .on_stream_close = cb_close,
    .on_goaway = cb_goaway,
    .on_pong = cb_pong,
};

app *app_new(sl_spdy_role role, const sl_spdy_limits *lim)
{
    app *a = calloc(1, sizeof(*a));
    assert_non_null(a);
    sl_bufq_init(&a->out);
    sl_bufq_init(&a->q);
    for (int i = 0; i < MAXID; i++)
        sl_bufq_init(&a->rx[i]);
    a->s = sl_spdy_session_new(role, &callbacks, a, &a->out, lim);
    assert_non_null(a->s);
    a->auto_reply = role == SL_SPDY_SERVER;
    sl_spdy_reader_init(&a->rd, SL_SPDY_MAX_LENGTH, SL_SPDY_MAX_LENGTH);
    assert_int_equal(sl_spdy_inflater_init(&a->inf, 1 << 20), SL_OK);
    return a;
}

void app_free(app *a)
{
    sl_spdy_session_free(a->s);
    sl_bufq_fini(&a->out);
    sl_bufq_fini(&a->q);
    if (a->t_ready)
        deflateEnd(&a->t.z);
    for (int i = 0; i < MAXID; i++)
        sl_bufq_fini(&a->rx[i]);
    sl_spdy_reader_fini(&a->rd);
    sl_spdy_inflater_fini(&a->inf);
    free(a);
}

const char *events(app *a)
{
    static char copy[sizeof(((app *)0)->ev)];
    memcpy(copy, a->ev, a->evlen + 1);
    a->evlen = 0;
    a->ev[0] = 0;
    return copy;
}

uint8_t *take_out(app *a, size_t *len)
{
    *len = sl_bufq_len(&a->out);
    uint8_t *p = malloc(*len ? *len : 1);
    assert_non_null(p);
    sl_bufq_copyout(&a->out, p, *len);
    sl_bufq_consume(&a->out, *len);
    return p;
}

void expect_out(app *a, const uint8_t *want, size_t want_len)
{
    uint8_t *p = malloc(want_len + 1);
    assert_non_null(p);
    assert_int_equal(sl_bufq_len(&a->out), want_len);
    sl_bufq_copyout(&a->out, p, want_len);
    assert_memory_equal(p, want, want_len);
    free(p);
    wire(a);
}

/* ---- decoding an app's output into text ---------------------------------------- */

static void wire_ctrl(app *a, const sl_spdy_event *ev, char *w, size_t cap)
{
    size_t l = strlen(w);
    sl_spdy_ctrl c;
    assert_int_equal(sl_spdy_ctrl_parse(&ev->hdr, ev->data, ev->len, &c), SL_OK);
    const sl_spdy_nv *nv;
    size_t n = 0;
    static const char *names[] = {"", "SYN_STREAM", "SYN_REPLY", "RST",     "SETTINGS",
                                  "", "PING",       "GOAWAY",    "HEADERS", "WU"};
    l += (size_t)snprintf(w + l, cap - l, "%s", names[c.type]);
    switch (c.type) {
    case SL_SPDY_SYN_STREAM:
    case SL_SPDY_SYN_REPLY:
    case SL_SPDY_HEADERS:
        assert_int_equal(sl_spdy_nv_decode(&a->inf, c.nv, c.nv_len, 64, &nv, &n), SL_OK);
        l += (size_t)snprintf(w + l, cap - l, " %u f%u", c.stream_id, c.flags);
        for (size_t i = 0; i < n; i++)
            l += (size_t)snprintf(w + l, cap - l, " %s=%s", nv[i].name, nv[i].value);
        break;
    case SL_SPDY_RST_STREAM:
    case SL_SPDY_GOAWAY:
        l += (size_t)snprintf(w + l, cap - l, " %u %u", c.stream_id, c.status);
        break;
    case SL_SPDY_PING:
        l += (size_t)snprintf(w + l, cap - l, " %u", c.value);
        break;
    case SL_SPDY_SETTINGS:
        for (uint32_t i = 0; i < c.count; i++) {
            uint8_t flags;
            uint32_t sid, value;
            sl_spdy_settings_entry(&c, i, &flags, &sid, &value);
            l += (size_t)snprintf(w + l, cap - l, " %u=%u", sid, value);
        }
        break;
    case SL_SPDY_WINDOW_UPDATE:
        l += (size_t)snprintf(w + l, cap - l, " %u %u", c.stream_id, c.value);
        break;
    default:
        break;
    }
    snprintf(w + l, cap - l, "|");
}

const char *wire(app *a)
{
    static char w[8192];
    w[0] = 0;
    size_t len;
    uint8_t *p = take_out(a, &len);
    size_t off = 0;
    for (;;) {
        sl_spdy_event ev;
        size_t used;
        int rc = sl_spdy_reader_next(&a->rd, p + off, len - off, &used, &ev);
        off += used;
        assert_true(rc >= 0);
        if (rc == 0)
            break;
        size_t l = strlen(w);
        if (ev.type == SL_SPDY_EV_CONTROL)
            wire_ctrl(a, &ev, w, sizeof(w));
        else if (ev.type == SL_SPDY_EV_DATA_BEGIN)
            a->did = ev.hdr.stream_id, a->dflags = ev.hdr.flags, a->dlen = 0;
        else if (ev.type == SL_SPDY_EV_DATA)
            a->dlen += ev.len;
        else if (ev.type == SL_SPDY_EV_DATA_END)
            snprintf(w + l, sizeof(w) - l, "DATA %u f%u %zu|", a->did, a->dflags, a->dlen);
    }
    free(p);
    return w;
}

/* ---- building peer input ------------------------------------------------------ */

void tc_init(tcomp *t)
{
    memset(t, 0, sizeof(*t));
    assert_int_equal(deflateInit2(&t->z, 9, Z_DEFLATED, 15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    assert_int_equal(deflateSetDictionary(&t->z, sl_spdy_dict, SL_SPDY_DICT_LEN), Z_OK);
}

size_t tc_block(tcomp *t, const uint8_t *raw, size_t n, uint8_t *out, size_t cap)
{
    t->z.next_in = (Bytef *)raw;
    t->z.avail_in = (uInt)n;
    t->z.next_out = out;
    t->z.avail_out = (uInt)cap;
    assert_int_equal(deflate(&t->z, Z_SYNC_FLUSH), Z_OK);
    assert_int_equal(t->z.avail_in, 0);
    return cap - t->z.avail_out;
}

size_t nv_raw(uint8_t *buf, ...)
{
    va_list ap;
    size_t off = 4, count = 0;
    va_start(ap, buf);
    for (const char *name; (name = va_arg(ap, const char *));) {
        const char *value = va_arg(ap, const char *);
        const char *s[2] = {name, value};
        for (int k = 0; k < 2; k++) {
            size_t l = strlen(s[k]);
            buf[off] = 0, buf[off + 1] = 0, buf[off + 2] = (uint8_t)(l >> 8);
            buf[off + 3] = (uint8_t)l;
            memcpy(buf + off + 4, s[k], l);
            off += 4 + l;
        }
        count++;
    }
    va_end(ap);
    buf[0] = buf[1] = buf[2] = 0;
    buf[3] = (uint8_t)count;
    return off;
}

void syn(sl_bufq *q, tcomp *t, uint32_t id, uint8_t flags, const uint8_t *raw, size_t n)
{
    uint8_t blk[4096];
    size_t bl = tc_block(t, raw, n, blk, sizeof(blk));
    assert_int_equal(sl_spdy_write_syn_stream(q, id, 0, 0, flags, blk, bl), SL_OK);
}

void syn_type(sl_bufq *q, tcomp *t, uint32_t id, const char *type)
{
    uint8_t raw[256];
    size_t n = nv_raw(raw, "streamtype", type, NULL);
    syn(q, t, id, 0, raw, n);
}

int feedq(app *a, sl_bufq *q)
{
    size_t len = sl_bufq_len(q);
    uint8_t *p = malloc(len ? len : 1);
    assert_non_null(p);
    sl_bufq_copyout(q, p, len);
    sl_bufq_consume(q, len);
    int rc = sl_spdy_session_recv(a->s, p, len);
    free(p);
    return rc;
}

int feed(app *a, const uint8_t *p, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan sees over-reads */
    assert_non_null(copy);
    memcpy(copy, p, len);
    int rc = sl_spdy_session_recv(a->s, copy, len);
    free(copy);
    return rc;
}

void pump(app *c, app *s, size_t high_water)
{
    for (int i = 0; i < 10000; i++) {
        assert_int_equal(sl_spdy_session_flush(c->s, high_water), SL_OK);
        assert_int_equal(sl_spdy_session_flush(s->s, high_water), SL_OK);
        if (!sl_bufq_len(&c->out) && !sl_bufq_len(&s->out))
            return;
        assert_int_equal(feedq(s, &c->out), SL_OK);
        assert_int_equal(feedq(c, &s->out), SL_OK);
    }
    fail_msg("pump did not settle");
}

size_t rx_take(app *a, uint32_t id, char *buf, size_t cap)
{
    size_t n = sl_bufq_copyout(&a->rx[id], buf, cap - 1);
    sl_bufq_consume(&a->rx[id], n);
    buf[n] = 0;
    return n;
}

size_t stored_block(const uint8_t *raw, size_t n, uint8_t *out)
{
    out[0] = 0x00;
    out[1] = (uint8_t)n, out[2] = (uint8_t)(n >> 8);
    out[3] = (uint8_t)~n, out[4] = (uint8_t)(~n >> 8);
    memcpy(out + 5, raw, n);
    memcpy(out + 5 + n, "\0\0\0\xff\xff", 5);
    return n + 10;
}

app *server_with_stream(const sl_spdy_limits *lim)
{
    app *a = app_new(SL_SPDY_SERVER, lim);
    tc_init(&a->t);
    a->t_ready = true;
    syn_type(&a->q, &a->t, 1, "data");
    assert_int_equal(feedq(a, &a->q), SL_OK);
    assert_string_equal(wire(a), "SYN_REPLY 1 f0|");
    events(a);
    return a;
}

void feed_data(app *a, uint32_t id, uint8_t flags, size_t len, int want)
{
    uint8_t *p = calloc(1, len + 1);
    assert_non_null(p);
    assert_int_equal(sl_spdy_write_data(&a->q, id, flags, p, len), SL_OK);
    assert_int_equal(feedq(a, &a->q), want);
    free(p);
}
