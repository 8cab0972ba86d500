/* sl_spdy_session against a bad peer: fatal frames end the session with
 * GOAWAY, per-stream faults with RST_STREAM, and a header block cut
 * short is fatal however the input is split. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <zlib.h>

#include "util/bufq.h"
#include "sluice/error.h"
#include "spdy/spdy_session.h"
#include "spdy_app.h"
#include "spdy_golden.h"

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
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fatal_frames),          cmocka_unit_test(fatal_limits),
        cmocka_unit_test(unknown_types_skipped), cmocka_unit_test(bad_stream_ids),
        cmocka_unit_test(data_on_bad_streams),   cmocka_unit_test(stream_limit),
        cmocka_unit_test(bad_header_blocks),     cmocka_unit_test(golden_block_every_truncation),
        cmocka_unit_test(cut_block_is_fatal),    cmocka_unit_test(nv_cut_is_fatal),
        cmocka_unit_test(syn_reply_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
