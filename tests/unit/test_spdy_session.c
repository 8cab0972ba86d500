#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <zlib.h>

#include "io/bufq.h"
#include "sluice/error.h"
#include "spdy/spdy_session.h"
#include "spdy_golden.h"

/* ---- golden vectors (protocol notes §4.4) ------------------------------------ */

static const uint8_t syn_stream_1[] = {0x80, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x29, 0x00, 0x00,
                                       0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x78, 0xf9,
                                       0xe3, 0xc6, 0xa7, 0xc2, 0x62, 0x60, 0x60, 0x60, 0x04, 0xa7,
                                       0xb3, 0x92, 0xa2, 0xd4, 0xc4, 0x5c, 0x68, 0x51, 0xc2, 0x9a,
                                       0x0a, 0x0a, 0x68, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff};
static const uint8_t syn_stream_3[] = {0x80, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x19, 0x00,
                                       0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                       0xc2, 0x2a, 0xc5, 0x56, 0x5c, 0x92, 0x92, 0x5f, 0x5a,
                                       0x02, 0x00, 0x00, 0x00, 0xff, 0xff};
static const uint8_t syn_reply_1[] = {0x80, 0x03, 0x00, 0x02, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00,
                                      0x00, 0x01, 0x78, 0xf9, 0xe3, 0xc6, 0xa7, 0xc2, 0x62, 0x60,
                                      0x60, 0x60, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff};
static const uint8_t syn_reply_3[] = {0x80, 0x03, 0x00, 0x02, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x00,
                                      0x00, 0x03, 0x02, 0x61, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff};
static const uint8_t data_hi[] = {0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x03, 0x68, 0x69, 0x0a};
static const uint8_t data_fin[] = {0x00, 0x00, 0x00, 0x03, 0x01, 0x00, 0x00, 0x00};
static const uint8_t rst_5[] = {0x80, 0x03, 0x00, 0x03, 0x00, 0x00, 0x00, 0x08,
                                0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x05};
static const uint8_t ping_1[] = {0x80, 0x03, 0x00, 0x06, 0x00, 0x00,
                                 0x00, 0x04, 0x00, 0x00, 0x00, 0x01};
static const uint8_t goaway_7[] = {0x80, 0x03, 0x00, 0x07, 0x00, 0x00, 0x00, 0x08,
                                   0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00};

/* ---- a test application around one session ---------------------------------- */

#define MAXID 64

/* The peer's compression context (client -> server direction). */
typedef struct tcomp {
    z_stream z;
} tcomp;

typedef struct app {
    sl_spdy_session *s;
    sl_bufq out;
    char ev[16384]; /* callback log */
    size_t evlen;
    bool auto_reply;    /* SYN_REPLY (empty headers) from on_stream_open */
    bool auto_consume;  /* consume everything on_data gives */
    bool reset_in_data; /* reset the stream from on_data (re-entrancy) */
    sl_bufq rx[MAXID];  /* received payload per stream id */
    /* decoding this app's own output, as its peer would */
    sl_spdy_reader rd;
    sl_spdy_inflater inf;
    uint8_t dflags;
    uint32_t did;
    size_t dlen;
    /* test scaffolding: the peer's compressor, a scratch frame queue */
    tcomp t;
    bool t_ready;
    sl_bufq q;
} app;

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
    if (a->auto_consume)
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

static app *app_new(sl_spdy_role role, const sl_spdy_limits *lim)
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

static void app_free(app *a)
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

/* Takes the callback log (and clears it). */
static const char *events(app *a)
{
    static char copy[sizeof(((app *)0)->ev)];
    memcpy(copy, a->ev, a->evlen + 1);
    a->evlen = 0;
    a->ev[0] = 0;
    return copy;
}

static uint8_t *take_out(app *a, size_t *len)
{
    *len = sl_bufq_len(&a->out);
    uint8_t *p = malloc(*len ? *len : 1);
    assert_non_null(p);
    sl_bufq_copyout(&a->out, p, *len);
    sl_bufq_consume(&a->out, *len);
    return p;
}

static const char *wire(app *a);

/* The output must be exactly these bytes; it is then decoded (and
 * consumed) like any other so the decoder's zlib context stays in step. */
static void expect_out(app *a, const uint8_t *want, size_t want_len)
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
    case SL_SPDY_WINDOW_UPDATE:
        l += (size_t)snprintf(w + l, cap - l, " %u %u", c.stream_id, c.value);
        break;
    default:
        break;
    }
    snprintf(w + l, cap - l, "|");
}

/* Decodes and consumes everything in a->out; returns e.g.
 * "SYN_REPLY 1 f0|DATA 3 f0 3|PING 1|". */
static const char *wire(app *a)
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

static void tc_init(tcomp *t)
{
    memset(t, 0, sizeof(*t));
    assert_int_equal(deflateInit2(&t->z, 9, Z_DEFLATED, 15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    assert_int_equal(deflateSetDictionary(&t->z, sl_spdy_dict, SL_SPDY_DICT_LEN), Z_OK);
}

static size_t tc_block(tcomp *t, const uint8_t *raw, size_t n, uint8_t *out, size_t cap)
{
    t->z.next_in = (Bytef *)raw;
    t->z.avail_in = (uInt)n;
    t->z.next_out = out;
    t->z.avail_out = (uInt)cap;
    assert_int_equal(deflate(&t->z, Z_SYNC_FLUSH), Z_OK);
    assert_int_equal(t->z.avail_in, 0);
    return cap - t->z.avail_out;
}

/* Raw NV block from name, value, ..., NULL (no checks: may hold duplicates). */
static size_t nv_raw(uint8_t *buf, ...)
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

/* A SYN_STREAM whose block comes from tcomp, appended to q. */
static void syn(sl_bufq *q, tcomp *t, uint32_t id, uint8_t flags, const uint8_t *raw, size_t n)
{
    uint8_t blk[4096];
    size_t bl = tc_block(t, raw, n, blk, sizeof(blk));
    assert_int_equal(sl_spdy_write_syn_stream(q, id, 0, 0, flags, blk, bl), SL_OK);
}

static void syn_type(sl_bufq *q, tcomp *t, uint32_t id, const char *type)
{
    uint8_t raw[256];
    size_t n = nv_raw(raw, "streamtype", type, NULL);
    syn(q, t, id, 0, raw, n);
}

/* Feeds the bytes of q (consumed) to a's session. */
static int feedq(app *a, sl_bufq *q)
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

static int feed(app *a, const uint8_t *p, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan sees over-reads */
    assert_non_null(copy);
    memcpy(copy, p, len);
    int rc = sl_spdy_session_recv(a->s, copy, len);
    free(copy);
    return rc;
}

static size_t rx_take(app *a, uint32_t id, char *buf, size_t cap)
{
    size_t n = sl_bufq_copyout(&a->rx[id], buf, cap - 1);
    sl_bufq_consume(&a->rx[id], n);
    buf[n] = 0;
    return n;
}

/* A stored deflate block and a sync flush (an empty stored block): a valid
 * continuation of any zlib stream that was sync-flushed, so it can follow
 * spdystream's golden blocks. */
static size_t stored_block(const uint8_t *raw, size_t n, uint8_t *out)
{
    out[0] = 0x00;
    out[1] = (uint8_t)n, out[2] = (uint8_t)(n >> 8);
    out[3] = (uint8_t)~n, out[4] = (uint8_t)(~n >> 8);
    memcpy(out + 5, raw, n);
    memcpy(out + 5 + n, "\0\0\0\xff\xff", 5);
    return n + 10;
}

/* ---- golden wire --------------------------------------------------------------- */

/* A SYN_STREAM whose block continues spdystream's client stream. */
static void syn_stored(app *a, uint32_t id, const char *type)
{
    uint8_t raw[64], blk[80];
    size_t n = nv_raw(raw, "streamtype", type, NULL);
    size_t bl = stored_block(raw, n, blk);
    assert_int_equal(sl_spdy_write_syn_stream(&a->q, id, 0, 0, 0, blk, bl), SL_OK);
    assert_int_equal(feedq(a, &a->q), SL_OK);
}

static void golden_server_wire(void **state)
{
    (void)state;
    app *a = app_new(SL_SPDY_SERVER, NULL);
    assert_int_equal(feed(a, syn_stream_1, sizeof(syn_stream_1)), SL_OK);
    assert_string_equal(events(a), "open 1 streamtype=error;");
    uint8_t reply_1[sizeof(syn_reply_1)];
    our_zlib_header(reply_1, syn_reply_1, sizeof(syn_reply_1), 12);
    expect_out(a, reply_1, sizeof(reply_1)); /* byte-exact first block */
    assert_int_equal(feed(a, syn_stream_3, sizeof(syn_stream_3)), SL_OK);
    assert_string_equal(events(a), "open 3 streamtype=stdout;");
    assert_string_equal(wire(a), "SYN_REPLY 3 f0|"); /* later blocks: meaning only */

    assert_int_equal(feed(a, ping_1, sizeof(ping_1)), SL_OK);
    expect_out(a, ping_1, sizeof(ping_1)); /* odd PING echoed identically */

    assert_int_equal(sl_spdy_stream_send(a->s, 3, (const uint8_t *)"hi\n", 3, false), SL_OK);
    assert_int_equal(sl_spdy_stream_pending(a->s, 3), 3);
    assert_int_equal(sl_spdy_session_flush(a->s, 65536), SL_OK);
    expect_out(a, data_hi, sizeof(data_hi));
    assert_int_equal(sl_spdy_stream_close(a->s, 3), SL_OK);
    assert_int_equal(sl_spdy_session_flush(a->s, 65536), SL_OK);
    expect_out(a, data_fin, sizeof(data_fin));
    assert_int_equal(feed(a, data_fin, sizeof(data_fin)), SL_OK); /* client FIN on 3 */
    assert_string_equal(events(a), "fin 3;close 3;");

    syn_stored(a, 5, "stderr");
    assert_string_equal(events(a), "open 5 streamtype=stderr;");
    assert_string_equal(wire(a), "SYN_REPLY 5 f0|");
    assert_int_equal(sl_spdy_stream_reset(a->s, 5, SL_SPDY_CANCEL), SL_OK);
    assert_string_equal(events(a), "close 5;");
    expect_out(a, rst_5, sizeof(rst_5));

    syn_stored(a, 7, "resize");
    assert_string_equal(wire(a), "SYN_REPLY 7 f0|");
    assert_int_equal(sl_spdy_session_last_good_id(a->s), 7);
    assert_int_equal(sl_spdy_goaway(a->s, SL_SPDY_GOAWAY_OK), SL_OK);
    expect_out(a, goaway_7, sizeof(goaway_7));
    assert_int_equal(sl_spdy_goaway(a->s, SL_SPDY_GOAWAY_OK), SL_ERR_STATE);
    app_free(a);
}

static void golden_client_wire(void **state)
{
    (void)state;
    app *c = app_new(SL_SPDY_CLIENT, NULL);
    const sl_spdy_nv h = {"streamType", 10, "error", 5};
    uint32_t id;
    assert_int_equal(sl_spdy_stream_open(c->s, &h, 1, false, &id), SL_OK);
    assert_int_equal(id, 1);
    size_t len = sl_bufq_len(&c->out);
    uint8_t *p = malloc(len);
    assert_non_null(p);
    sl_bufq_copyout(&c->out, p, len);
    assert_string_equal(wire(c), "SYN_STREAM 1 f0 streamtype=error|"); /* lowercase */
    /* Frame header and fixed fields as spdystream's; the compressed bytes
     * after the zlib header differ (Go's deflater picks other matches). */
    assert_memory_equal(p, syn_stream_1, 5);
    assert_int_equal(p[5] << 16 | p[6] << 8 | p[7], len - 8);
    uint8_t stream_1[sizeof(syn_stream_1)];
    our_zlib_header(stream_1, syn_stream_1, sizeof(syn_stream_1), 18);
    assert_memory_equal(p + 8, stream_1 + 8, 10 + 6);
    app *s = app_new(SL_SPDY_SERVER, NULL);
    assert_int_equal(feed(s, p, len), SL_OK);
    assert_string_equal(events(s), "open 1 streamtype=error;");
    free(p);
    app_free(s);

    const sl_spdy_nv h3 = {"streamtype", 10, "stdout", 6};
    assert_int_equal(sl_spdy_stream_open(c->s, &h3, 1, false, &id), SL_OK);
    assert_int_equal(id, 3);
    wire(c);
    /* data queued before the SYN_REPLY waits for it */
    assert_int_equal(sl_spdy_stream_send(c->s, 3, (const uint8_t *)"hi\n", 3, true), SL_OK);
    assert_int_equal(sl_spdy_session_flush(c->s, 65536), SL_OK);
    assert_false(sl_spdy_session_want_write(c->s));
    assert_int_equal(sl_bufq_len(&c->out), 0);
    assert_int_equal(feed(c, syn_reply_1, sizeof(syn_reply_1)), SL_OK);
    assert_int_equal(feed(c, syn_reply_3, sizeof(syn_reply_3)), SL_OK);
    assert_string_equal(events(c), "reply 1;reply 3;");
    assert_true(sl_spdy_session_want_write(c->s));
    assert_int_equal(sl_spdy_session_flush(c->s, 65536), SL_OK);
    uint8_t both[sizeof(data_hi) + sizeof(data_fin)];
    memcpy(both, data_hi, sizeof(data_hi));
    memcpy(both + sizeof(data_hi), data_fin, sizeof(data_fin));
    expect_out(c, both, sizeof(both));

    uint32_t pid;
    assert_int_equal(sl_spdy_ping(c->s, &pid), SL_OK);
    assert_int_equal(pid, 1);
    expect_out(c, ping_1, sizeof(ping_1));
    assert_int_equal(feed(c, ping_1, sizeof(ping_1)), SL_OK);
    assert_string_equal(events(c), "pong 1;");
    assert_int_equal(sl_bufq_len(&c->out), 0); /* our own parity: not echoed */

    assert_int_equal(feed(c, goaway_7, sizeof(goaway_7)), SL_OK);
    assert_string_equal(events(c), "goaway 7 0;");
    assert_int_equal(sl_spdy_session_num_streams(c->s), 2);
    assert_int_equal(sl_spdy_stream_open(c->s, &h, 1, false, &id), SL_ERR_CLOSED);
    app_free(c);
}

/* ---- every split --------------------------------------------------------------- */

static size_t client_stream(uint8_t *buf)
{
    sl_bufq q;
    sl_bufq_init(&q);
    sl_bufq_append(&q, syn_stream_1, sizeof(syn_stream_1));
    sl_bufq_append(&q, syn_stream_3, sizeof(syn_stream_3));
    sl_bufq_append(&q, ping_1, sizeof(ping_1));
    sl_spdy_write_data(&q, 1, 0, (const uint8_t *)"hello", 5);
    sl_bufq_append(&q, data_hi, sizeof(data_hi));
    sl_bufq_append(&q, data_fin, sizeof(data_fin));
    const uint8_t noop[] = {0x80, 0x03, 0x00, 0x05, 0x00, 0x00, 0x00, 0x02, 9, 9};
    sl_bufq_append(&q, noop, sizeof(noop));
    uint8_t raw[64], blk[80];
    size_t bl = stored_block(raw, nv_raw(raw, "streamtype", "stderr", NULL), blk);
    sl_spdy_write_syn_stream(&q, 5, 0, 0, 0, blk, bl);
    sl_spdy_write_rst_stream(&q, 5, SL_SPDY_CANCEL);
    sl_spdy_write_data(&q, 9, 0, (const uint8_t *)"?", 1);
    sl_spdy_write_goaway(&q, 0, 0);
    size_t len = sl_bufq_copyout(&q, buf, 1024);
    assert_int_equal(len, sl_bufq_len(&q));
    sl_bufq_fini(&q);
    return len;
}

static void run_split(const uint8_t *p, size_t len, size_t step, size_t cut, char *ev, char *out)
{
    app *a = app_new(SL_SPDY_SERVER, NULL);
    a->auto_consume = true;
    if (step) {
        for (size_t off = 0; off < len; off += step)
            assert_int_equal(feed(a, p + off, off + step > len ? len - off : step), SL_OK);
    } else {
        assert_int_equal(feed(a, p, cut), SL_OK);
        assert_int_equal(feed(a, p + cut, len - cut), SL_OK);
    }
    strcpy(ev, events(a));
    strcpy(out, wire(a));
    char buf[16];
    rx_take(a, 1, buf, sizeof(buf));
    assert_string_equal(buf, "hello");
    rx_take(a, 3, buf, sizeof(buf));
    assert_string_equal(buf, "hi\n");
    app_free(a);
}

static void every_split(void **state)
{
    (void)state;
    static uint8_t p[1024];
    static char ev0[4096], out0[4096], ev[4096], out[4096];
    size_t len = client_stream(p);
    run_split(p, len, 0, len, ev0, out0);
    assert_string_equal(ev0, "open 1 streamtype=error;open 3 streamtype=stdout;fin 3;"
                             "open 5 streamtype=stderr;reset 5 5;close 5;goaway 0 0;");
    assert_string_equal(out0, "SYN_REPLY 1 f0|SYN_REPLY 3 f0|PING 1|SYN_REPLY 5 f0|RST 9 2|");
    for (size_t cut = 0; cut <= len; cut++) {
        run_split(p, len, 0, cut, ev, out);
        assert_string_equal(ev, ev0);
        assert_string_equal(out, out0);
    }
    for (size_t step = 1; step <= 3; step++) {
        run_split(p, len, step, 0, ev, out);
        assert_string_equal(ev, ev0);
        assert_string_equal(out, out0);
    }
}

/* ---- a server with one stream ------------------------------------------------------ */

/* A server with stream 1 open and replied (its SYN_REPLY already read). */
static app *server_with_stream(const sl_spdy_limits *lim)
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

static void feed_data(app *a, uint32_t id, uint8_t flags, size_t len, int want)
{
    uint8_t *p = calloc(1, len + 1);
    assert_non_null(p);
    assert_int_equal(sl_spdy_write_data(&a->q, id, flags, p, len), SL_OK);
    assert_int_equal(feedq(a, &a->q), want);
    free(p);
}

/* ---- validation ------------------------------------------------------------------ */

static void expect_fatal(app *a, const uint8_t *f, size_t n, int err, const char *w)
{
    int rc = feed(a, f, n);
    assert_int_equal(rc, err);
    assert_true(sl_err_is_fatal(rc));
    assert_string_equal(wire(a), w);
    assert_false(sl_spdy_session_want_read(a->s));
    assert_int_equal(feed(a, ping_1, sizeof(ping_1)), err); /* sticky, silent */
    assert_string_equal(wire(a), "");
    assert_int_equal(sl_spdy_ping(a->s, NULL), err);
}

static void fatal_frames(void **state)
{
    (void)state;
    static const struct {
        uint8_t f[20];
        size_t n;
        int err;
    } cases[] = {
        {{0x80, 2, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1}, 12, SL_ERR_UNSUPPORTED},       /* version 2 */
        {{0x80, 3, 0, 3, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0}, 16, SL_ERR_PROTO}, /* RST status 0 */
        {{0x80, 3, 0, 3, 0, 0, 0, 4, 0, 0, 0, 1}, 12, SL_ERR_PROTO},             /* RST short */
        {{0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 0}, 12, SL_ERR_PROTO},             /* PING id 0 */
        {{0x80, 3, 0, 7, 0, 0, 0, 4, 0, 0, 0, 0}, 12, SL_ERR_PROTO},             /* GOAWAY short */
        {{0x80, 3, 0, 9, 0, 0, 0, 12}, 20, SL_ERR_PROTO},                        /* WU long */
        {{0, 0, 0, 0, 0, 0, 0, 1, 'x'}, 9, SL_ERR_PROTO},                        /* DATA id 0 */
        {{0x80, 3, 0, 4, 0, 0, 0, 12, 0, 0, 0, 1, 0, 0, 0, 7, 0x80, 0, 0, 0}, 20, SL_ERR_PROTO},
        {{0x80, 3, 0, 9, 0, 0, 0, 8, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff}, 16, SL_ERR_PROTO},
        {{0x80, 3, 0, 1, 0, 0, 0, 10}, 18, SL_ERR_PROTO}, /* SYN_STREAM id 0 */
        {{0x80, 3, 0, 1, 0, 0, 0, 16, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x78, 0xf9},
         20,
         SL_ERR_COMPRESSION}, /* wrong dictionary id / truncated */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        app *a = app_new(SL_SPDY_SERVER, NULL);
        uint8_t f[40] = {0};
        memcpy(f, cases[i].f, sizeof(cases[i].f));
        size_t n = cases[i].n;
        if (cases[i].err == SL_ERR_COMPRESSION) { /* complete the 16-byte payload */
            const uint8_t junk[] = {0xe3, 0xc6, 0xa7, 0xc3, 0xff, 0xff};
            memcpy(f + 20, junk, sizeof(junk));
            n = 26;
            f[7] = 18;
        }
        expect_fatal(a, f, n, cases[i].err, "GOAWAY 0 1|");
        app_free(a);
    }
}

static void fatal_limits(void **state)
{
    (void)state;
    sl_spdy_limits lim = {
        .max_control_payload = 100, .max_data_payload = 1000, .max_header_block = 1024};
    app *a = server_with_stream(&lim);
    uint8_t f[8 + 200] = {0x80, 3, 0, 1, 0, 0, 0, 200};
    expect_fatal(a, f, sizeof(f), SL_ERR_TOO_LARGE, "GOAWAY 1 1|");
    app_free(a);

    a = server_with_stream(&lim);
    uint8_t d[8] = {0, 0, 0, 1, 0, 0, 0x03, 0xe9}; /* 1001 bytes */
    expect_fatal(a, d, sizeof(d), SL_ERR_TOO_LARGE, "GOAWAY 1 1|");
    app_free(a);

    /* a header bomb: 64 KiB value, compressed to a few hundred bytes */
    sl_spdy_limits lim2 = {.max_header_block = 1024};
    a = server_with_stream(&lim2);
    static uint8_t raw[70000];
    char *v = malloc(65536);
    assert_non_null(v);
    memset(v, 'a', 65535);
    v[65535] = 0;
    size_t n = nv_raw(raw, "x", v, NULL);
    free(v);
    syn(&a->q, &a->t, 3, 0, raw, n);
    assert_true(sl_bufq_len(&a->q) < 1000);
    size_t len;
    uint8_t *p = malloc(sl_bufq_len(&a->q));
    len = sl_bufq_copyout(&a->q, p, sl_bufq_len(&a->q));
    expect_fatal(a, p, len, SL_ERR_TOO_LARGE, "GOAWAY 1 1|");
    free(p);
    app_free(a);
}

static void unknown_types_skipped(void **state)
{
    (void)state;
    app *a = app_new(SL_SPDY_SERVER, NULL);
    const uint8_t f[] = {0x80, 3, 0,    5,    0, 0, 0, 4, 1, 2, 3, 4, /* NOOP */
                         0x80, 3, 0,    10,   0, 0, 0, 2, 1, 2,       /* CREDENTIAL */
                         0x80, 3, 0x12, 0x34, 0, 0, 0, 0};            /* anything else */
    assert_int_equal(feed(a, f, sizeof(f)), SL_OK);
    assert_int_equal(feed(a, ping_1, sizeof(ping_1)), SL_OK);
    assert_string_equal(wire(a), "PING 1|");
    assert_true(sl_spdy_session_want_read(a->s));
    app_free(a);
}

static void bad_stream_ids(void **state)
{
    (void)state;
    app *a = server_with_stream(NULL);
    syn_type(&a->q, &a->t, 5, "a");
    syn_type(&a->q, &a->t, 3, "b"); /* not increasing */
    syn_type(&a->q, &a->t, 6, "c"); /* even, from a client */
    syn_type(&a->q, &a->t, 7, "d"); /* still fine: the context followed every block */
    assert_int_equal(feedq(a, &a->q), SL_OK);
    assert_string_equal(events(a), "open 5 streamtype=a;open 7 streamtype=d;");
    assert_string_equal(wire(a), "SYN_REPLY 5 f0|RST 3 1|RST 6 1|SYN_REPLY 7 f0|");
    assert_int_equal(sl_spdy_session_last_good_id(a->s), 7);
    app_free(a);
}

static void data_on_bad_streams(void **state)
{
    (void)state;
    app *a = server_with_stream(NULL);
    feed_data(a, 9, 0, 3, SL_OK);
    feed_data(a, 9, 0, 3, SL_OK);
    assert_string_equal(wire(a), "RST 9 2|"); /* once per id */
    feed_data(a, 1, SL_SPDY_FLAG_FIN, 0, SL_OK);
    assert_string_equal(events(a), "fin 1;");
    feed_data(a, 1, 0, 1, SL_OK);
    assert_string_equal(events(a), "reset 1 9;close 1;");
    assert_string_equal(wire(a), "RST 1 9|");

    /* DATA in flight on a stream we reset is dropped quietly */
    syn_type(&a->q, &a->t, 3, "data");
    assert_int_equal(feedq(a, &a->q), SL_OK);
    assert_int_equal(sl_spdy_stream_reset(a->s, 3, SL_SPDY_CANCEL), SL_OK);
    assert_string_equal(wire(a), "SYN_REPLY 3 f0|RST 3 5|");
    events(a);
    feed_data(a, 3, 0, 10, SL_OK);
    assert_string_equal(wire(a), "");
    assert_string_equal(events(a), "");

    /* reset from inside on_data: the rest of the frame is dropped */
    syn_type(&a->q, &a->t, 5, "data");
    assert_int_equal(feedq(a, &a->q), SL_OK);
    wire(a);
    events(a);
    a->reset_in_data = true;
    uint8_t two[2 * 11];
    sl_bufq_init(&a->q);
    sl_spdy_write_data(&a->q, 5, 0, (const uint8_t *)"abc", 3);
    sl_spdy_write_data(&a->q, 5, 0, (const uint8_t *)"def", 3);
    size_t n = sl_bufq_copyout(&a->q, two, sizeof(two));
    sl_bufq_consume(&a->q, n);
    for (size_t cut = 0; cut < 2; cut++) /* chunk of 1, then the rest */
        assert_int_equal(feed(a, two + cut, cut ? n - 1 : 1), SL_OK);
    assert_int_equal(sl_bufq_len(&a->rx[5]), 3);
    assert_string_equal(events(a), "close 5;");
    assert_string_equal(wire(a), "RST 5 5|");
    app_free(a);
}

static void stream_limit(void **state)
{
    (void)state;
    sl_spdy_limits lim = {.max_streams = 2};
    app *a = server_with_stream(&lim);
    syn_type(&a->q, &a->t, 3, "b");
    syn_type(&a->q, &a->t, 5, "c");
    assert_int_equal(feedq(a, &a->q), SL_OK);
    assert_string_equal(wire(a), "SYN_REPLY 3 f0|RST 5 3|");
    assert_int_equal(sl_spdy_stream_reset(a->s, 1, SL_SPDY_CANCEL), SL_OK);
    syn_type(&a->q, &a->t, 7, "d");
    assert_int_equal(feedq(a, &a->q), SL_OK);
    assert_string_equal(wire(a), "RST 1 5|SYN_REPLY 7 f0|");
    app_free(a);
}

static void bad_header_blocks(void **state)
{
    (void)state;
    sl_spdy_limits lim = {.max_header_pairs = 2};
    app *a = server_with_stream(&lim);
    uint8_t raw[256];
    syn(&a->q, &a->t, 3, 0, raw, nv_raw(raw, "port", "1", "Port", "2", NULL));
    syn(&a->q, &a->t, 5, 0, raw, nv_raw(raw, "a", "1", "b", "2", "c", "3", NULL));
    syn(&a->q, &a->t, 7, 0, raw, nv_raw(raw, "", "1", NULL));
    syn(&a->q, &a->t, 9, 0, raw, nv_raw(raw, "Port", "80", "requestID", "0", NULL));
    /* HEADERS on stream 1 with FIN */
    uint8_t blk[256];
    size_t bl = tc_block(&a->t, raw, nv_raw(raw, "a", "b", NULL), blk, sizeof(blk));
    sl_spdy_write_headers(&a->q, 1, SL_SPDY_FLAG_FIN, blk, bl);
    assert_int_equal(feedq(a, &a->q), SL_OK);
    assert_string_equal(wire(a), "RST 3 1|RST 5 1|RST 7 1|SYN_REPLY 9 f0|");
    assert_string_equal(events(a), "open 9 Port=80 requestID=0;headers 1 a=b;fin 1;");
    app_free(a);
}

/* ---- header blocks cut short ------------------------------------------------------ */

/* SYN_STREAM id carrying block[0, len) from an exact-size frame copy. */
static uint8_t *syn_frame(uint32_t id, const uint8_t *block, size_t len, size_t *flen)
{
    sl_bufq q;
    sl_bufq_init(&q);
    assert_int_equal(sl_spdy_write_syn_stream(&q, id, 0, 0, 0, block, len), SL_OK);
    *flen = sl_bufq_len(&q);
    uint8_t *f = malloc(*flen);
    assert_non_null(f);
    sl_bufq_copyout(&q, f, *flen);
    sl_bufq_fini(&q);
    return f;
}

/* Every proper prefix of a golden block: the session ends at once with
 * GOAWAY(last good id, PROTOCOL_ERROR), no RST_STREAM. */
static void golden_block_every_truncation(void **state)
{
    (void)state;
    const size_t hdr = 18; /* frame header, ids, priority, slot */
    for (size_t cut = 0; cut < sizeof(syn_stream_1) - hdr; cut++) {
        app *a = app_new(SL_SPDY_SERVER, NULL);
        size_t flen;
        uint8_t *f = syn_frame(1, syn_stream_1 + hdr, cut, &flen);
        expect_fatal(a, f, flen, SL_ERR_COMPRESSION, "GOAWAY 0 1|");
        assert_string_equal(events(a), "");
        free(f);
        app_free(a);
    }
    for (size_t cut = 0; cut < sizeof(syn_stream_3) - hdr; cut++) {
        app *a = app_new(SL_SPDY_SERVER, NULL);
        assert_int_equal(feed(a, syn_stream_1, sizeof(syn_stream_1)), SL_OK);
        assert_string_equal(wire(a), "SYN_REPLY 1 f0|");
        size_t flen;
        uint8_t *f = syn_frame(3, syn_stream_3 + hdr, cut, &flen);
        expect_fatal(a, f, flen, SL_ERR_COMPRESSION, "GOAWAY 1 1|");
        assert_string_equal(events(a), "open 1 streamtype=error;");
        free(f);
        app_free(a);
    }
}

/* The interop case (tests/interop/spdy_bad.test.mjs): stream 1 replied,
 * SYN_STREAM 3 with the first half of {streamtype: error, x-pad: 3000 x
 * 'a'}, then well-formed SYN_STREAMs 5 and 7, fed in every 2-way split and
 * byte by byte. */
static size_t cut_block_input(uint8_t *buf, size_t cap)
{
    tcomp t;
    tc_init(&t);
    sl_bufq q;
    sl_bufq_init(&q);
    syn_type(&q, &t, 1, "bogus");
    static uint8_t raw[4096], blk[4096];
    char pad[3001];
    memset(pad, 'a', 3000);
    pad[3000] = 0;
    size_t bl =
        tc_block(&t, raw, nv_raw(raw, "streamtype", "error", "x-pad", pad, NULL), blk, sizeof(blk));
    assert_int_equal(sl_spdy_write_syn_stream(&q, 3, 0, 0, 0, blk, bl / 2), SL_OK);
    syn_type(&q, &t, 5, "error");
    syn_type(&q, &t, 7, "stdout");
    deflateEnd(&t.z);
    size_t len = sl_bufq_copyout(&q, buf, cap);
    assert_int_equal(len, sl_bufq_len(&q));
    sl_bufq_fini(&q);
    return len;
}

/* Feeds p in pieces of `step` bytes, or (step 0) in two pieces cut at
 * `cut`, stopping at the first error. */
static void cut_block_run(const uint8_t *p, size_t len, size_t step, size_t cut)
{
    app *a = app_new(SL_SPDY_SERVER, NULL);
    int rc = SL_OK;
    size_t off = 0;
    if (!step) {
        rc = feed(a, p, cut);
        off = cut;
        step = len;
    }
    for (; off < len && rc == SL_OK; off += step)
        rc = feed(a, p + off, len - off < step ? len - off : step);
    assert_int_equal(rc, SL_ERR_COMPRESSION);
    assert_false(sl_spdy_session_want_read(a->s));
    assert_string_equal(wire(a), "SYN_REPLY 1 f0|GOAWAY 1 1|");
    assert_string_equal(events(a), "open 1 streamtype=bogus;");
    app_free(a);
}

static void cut_block_is_fatal(void **state)
{
    (void)state;
    static uint8_t p[8192];
    size_t len = cut_block_input(p, sizeof(p));
    for (size_t cut = 0; cut <= len; cut++)
        cut_block_run(p, len, 0, cut);
    cut_block_run(p, len, 1, 0);
}

/* A block that ends on a flush point inside the sender's NV block (a
 * sender flushing twice per block, cut after the first flush): inflate
 * cannot tell, the NV block needs more bytes than it got. Fatal. */
static void nv_cut_is_fatal(void **state)
{
    (void)state;
    app *a = server_with_stream(NULL);
    uint8_t raw[256], blk[256];
    size_t rl = nv_raw(raw, "streamtype", "stdout", "port", "8080", NULL);
    size_t bl = tc_block(&a->t, raw, rl / 2, blk, sizeof(blk));
    size_t flen;
    uint8_t *f = syn_frame(3, blk, bl, &flen);
    expect_fatal(a, f, flen, SL_ERR_PROTO, "GOAWAY 1 1|");
    assert_string_equal(events(a), "");
    free(f);
    app_free(a);
}

static void syn_reply_errors(void **state)
{
    (void)state;
    app *a = server_with_stream(NULL);
    uint8_t raw[64], blk[128];
    size_t bl = tc_block(&a->t, raw, nv_raw(raw, NULL), blk, sizeof(blk));
    sl_spdy_write_syn_reply(&a->q, 1, 0, blk, bl); /* the peer's own stream */
    bl = tc_block(&a->t, raw, nv_raw(raw, NULL), blk, sizeof(blk));
    sl_spdy_write_syn_reply(&a->q, 4, 0, blk, bl); /* unknown */
    assert_int_equal(feedq(a, &a->q), SL_OK);
    assert_string_equal(wire(a), "RST 1 1|RST 4 2|");
    assert_string_equal(events(a), "reset 1 1;close 1;");
    app_free(a);

    /* client: a second SYN_REPLY for one stream */
    app *c = app_new(SL_SPDY_CLIENT, NULL);
    const sl_spdy_nv h = {"streamtype", 10, "x", 1};
    assert_int_equal(sl_spdy_stream_open(c->s, &h, 1, false, NULL), SL_OK);
    wire(c);
    assert_int_equal(feed(c, syn_reply_1, sizeof(syn_reply_1)), SL_OK);
    bl = stored_block((const uint8_t *)"\0\0\0\0", 4, blk);
    sl_spdy_write_syn_reply(&c->q, 1, 0, blk, bl);
    assert_int_equal(feedq(c, &c->q), SL_OK);
    assert_string_equal(events(c), "reply 1;reset 1 8;close 1;");
    assert_string_equal(wire(c), "RST 1 8|");
    app_free(c);
}

static void open_callbacks_and_flags(void **state)
{
    (void)state;
    sl_spdy_callbacks none = {0};
    sl_bufq out;
    sl_bufq_init(&out);
    sl_spdy_session *s = sl_spdy_session_new(SL_SPDY_SERVER, &none, NULL, &out, NULL);
    assert_non_null(s);
    assert_int_equal(sl_spdy_session_recv(s, syn_stream_1, sizeof(syn_stream_1)), SL_OK);
    const uint8_t refused[] = {0x80, 3, 0, 3, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 3};
    assert_int_equal(sl_bufq_len(&out), sizeof(refused));
    uint8_t got[sizeof(refused)];
    sl_bufq_copyout(&out, got, sizeof(got));
    assert_memory_equal(got, refused, sizeof(refused));
    sl_spdy_session_free(s);
    sl_bufq_fini(&out);

    app *a = server_with_stream(NULL);
    uint8_t raw[64];
    syn(&a->q, &a->t, 3, SL_SPDY_FLAG_FIN | SL_SPDY_FLAG_UNIDIRECTIONAL, raw, nv_raw(raw, NULL));
    assert_int_equal(feedq(a, &a->q), SL_OK);
    assert_string_equal(events(a), "open 3 fin uni;close 3;");
    assert_string_equal(wire(a), "SYN_REPLY 3 f0|");
    assert_int_equal(sl_spdy_session_num_streams(a->s), 1);
    app_free(a);
}

static void api_errors(void **state)
{
    (void)state;
    app *a = server_with_stream(NULL);
    const uint8_t x = 'x';
    assert_int_equal(sl_spdy_stream_send(a->s, 3, &x, 1, false), SL_ERR_NOTFOUND);
    assert_int_equal(sl_spdy_stream_reply(a->s, 1, NULL, 0, false), SL_ERR_STATE);
    assert_int_equal(sl_spdy_stream_reply(a->s, 3, NULL, 0, false), SL_ERR_NOTFOUND);
    assert_int_equal(sl_spdy_stream_reset(a->s, 1, 0), SL_ERR_INVAL);
    assert_int_equal(sl_spdy_stream_reset(a->s, 3, SL_SPDY_CANCEL), SL_ERR_NOTFOUND);
    assert_int_equal(sl_spdy_stream_consumed(a->s, 1, 1), SL_ERR_INVAL);
    assert_int_equal(sl_spdy_stream_pending(a->s, 3), 0);
    const sl_spdy_nv dup[] = {{"a", 1, "1", 1}, {"A", 1, "2", 1}};
    a->auto_reply = false;
    syn_type(&a->q, &a->t, 3, "data");
    assert_int_equal(feedq(a, &a->q), SL_OK);
    assert_int_equal(sl_spdy_stream_send(a->s, 3, &x, 1, false), SL_ERR_STATE); /* no reply */
    assert_int_equal(sl_spdy_stream_reply(a->s, 3, dup, 2, false), SL_ERR_INVAL);
    assert_int_equal(sl_spdy_stream_reply(a->s, 3, NULL, 0, true), SL_OK);
    assert_int_equal(sl_spdy_stream_send(a->s, 3, &x, 1, false), SL_ERR_STATE); /* FIN sent */
    assert_int_equal(sl_spdy_stream_close(a->s, 1), SL_OK);
    assert_int_equal(sl_spdy_stream_close(a->s, 1), SL_ERR_STATE);
    assert_string_equal(wire(a), "SYN_REPLY 3 f1|");
    /* a server may open streams too: even ids */
    uint32_t id;
    const sl_spdy_nv h = {"k", 1, "v", 1};
    assert_int_equal(sl_spdy_stream_open(a->s, &h, 1, true, &id), SL_OK);
    assert_int_equal(id, 2);
    assert_string_equal(wire(a), "SYN_STREAM 2 f1 k=v|");
    app_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(golden_server_wire),
        cmocka_unit_test(golden_client_wire),
        cmocka_unit_test(every_split),
        cmocka_unit_test(fatal_frames),
        cmocka_unit_test(fatal_limits),
        cmocka_unit_test(unknown_types_skipped),
        cmocka_unit_test(bad_stream_ids),
        cmocka_unit_test(data_on_bad_streams),
        cmocka_unit_test(stream_limit),
        cmocka_unit_test(bad_header_blocks),
        cmocka_unit_test(golden_block_every_truncation),
        cmocka_unit_test(cut_block_is_fatal),
        cmocka_unit_test(nv_cut_is_fatal),
        cmocka_unit_test(syn_reply_errors),
        cmocka_unit_test(open_callbacks_and_flags),
        cmocka_unit_test(api_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
