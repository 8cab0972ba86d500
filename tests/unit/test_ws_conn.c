#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sluice/error.h"
#include "ws/ws_conn.h"
#include "ws_rec.h"

#define TEST_MAX_MESSAGE 64

static const uint8_t KEY[4] = {0x37, 0xfa, 0x21, 0x3d};

/* ---- building client frames (masked, as a real client sends) ---- */

typedef struct wire {
    uint8_t b[4096];
    size_t n;
} wire;

static void frame(wire *w, int fin, int op, const void *payload, size_t len, int masked)
{
    assert_true(w->n + len + 14 <= sizeof(w->b));
    w->n += ws_frame(w->b + w->n, fin, op, payload, len, masked ? KEY : NULL);
}

static void raw(wire *w, const void *bytes, size_t len)
{
    memcpy(w->b + w->n, bytes, len);
    w->n += len;
}

/* Flushes and returns everything written so far (static buffer). */
static const uint8_t *flushed(rec *r, size_t *n)
{
    static uint8_t buf[1 << 17];
    assert_int_equal(sl_ws_conn_flush(r->ws), SL_OK);
    *n = sl_bufq_len(&r->out);
    assert_true(*n <= sizeof(buf));
    sl_bufq_copyout(&r->out, buf, *n);
    return buf;
}

static void expect_out(rec *r, const uint8_t *want, size_t want_len)
{
    size_t n;
    const uint8_t *got = flushed(r, &n);
    assert_int_equal(n, want_len);
    assert_memory_equal(got, want, want_len);
}

typedef void (*check_fn)(rec *r);

/* Feeds w whole, at every 2-way split and byte by byte, each into a new
 * connection, and runs check on the outcome. */
static void every_split(const wire *w, size_t max, check_fn check)
{
    rec r;
    for (size_t cut = 0; cut <= w->n; cut++) {
        rec_open(&r, 0, max);
        feed(&r, w->b, cut);
        feed(&r, w->b + cut, w->n - cut);
        check(&r);
        rec_close(&r);
    }
    rec_open(&r, 0, max);
    for (size_t i = 0; i < w->n; i++)
        feed(&r, w->b + i, 1);
    check(&r);
    rec_close(&r);
}

static const uint8_t CLOSE_1002[] = {0x88, 0x02, 0x03, 0xea};
static const uint8_t CLOSE_1009[] = {0x88, 0x02, 0x03, 0xf1};

/* ---- inbound ---- */

static void check_binary(rec *r)
{
    assert_int_equal(r->rv, SL_OK);
    assert_int_equal(r->nmsg, 1);
    assert_int_equal(r->is_text[0], 0);
    assert_int_equal(r->len[0], 5);
    assert_memory_equal(r->data[0],
                        "\x00"
                        "foo\n",
                        5);
    assert_int_equal(r->nclose, 0);
    expect_out(r, NULL, 0);
}

static void binary_message(void **state)
{
    (void)state;
    wire w = {.n = 0};
    frame(&w, 1, WSLAY_BINARY_FRAME,
          "\x00"
          "foo\n",
          5, 1);
    every_split(&w, TEST_MAX_MESSAGE, check_binary);
}

static void check_fragmented(rec *r)
{
    assert_int_equal(r->rv, SL_OK);
    assert_int_equal(r->nmsg, 2);
    assert_int_equal(r->is_text[0], 1);
    assert_int_equal(r->len[0], 13);
    assert_memory_equal(r->data[0], "1Hello, world", 13);
    assert_int_equal(r->is_text[1], 0);
    assert_int_equal(r->len[1], 0);
    /* the ping between fragments is answered */
    expect_out(r, (const uint8_t *)"\x8a\x02hb", 4);
}

static void fragmented_text(void **state)
{
    (void)state;
    wire w = {.n = 0};
    frame(&w, 0, WSLAY_TEXT_FRAME, "1Hel", 4, 1);
    frame(&w, 0, WSLAY_CONTINUATION_FRAME, "lo, ", 4, 1);
    frame(&w, 1, WSLAY_PING, "hb", 2, 1);
    frame(&w, 1, WSLAY_CONTINUATION_FRAME, "world", 5, 1);
    frame(&w, 1, WSLAY_BINARY_FRAME, "", 0, 1); /* empty message */
    every_split(&w, TEST_MAX_MESSAGE, check_fragmented);
}

static void check_ping(rec *r)
{
    assert_int_equal(r->rv, SL_OK);
    assert_int_equal(r->nmsg, 0);
    assert_int_equal(r->nclose, 0);
    expect_out(r, (const uint8_t *)"\x8a\x00\x8a\x05hello", 9);
}

static void ping_pong(void **state)
{
    (void)state;
    wire w = {.n = 0};
    frame(&w, 1, WSLAY_PING, "", 0, 1);
    frame(&w, 1, WSLAY_PING, "hello", 5, 1);
    frame(&w, 1, WSLAY_PONG, "x", 1, 1); /* unsolicited pong: ignored */
    every_split(&w, TEST_MAX_MESSAGE, check_ping);
}

static void check_unmasked(rec *r)
{
    assert_int_equal(r->rv, SL_ERR_PROTO);
    assert_int_equal(r->nmsg, 1); /* the masked message before it */
    assert_int_equal(r->len[0], 2);
    assert_int_equal(r->nclose, 1);
    assert_int_equal(r->code, 1002);
    expect_out(r, CLOSE_1002, sizeof(CLOSE_1002));
    /* everything later is refused, nothing else is written */
    assert_int_equal(sl_ws_conn_recv(r->ws, (const uint8_t *)"\x82\x00", 2), SL_ERR_PROTO);
    assert_int_equal(sl_ws_conn_send_msg(r->ws, WSLAY_BINARY_FRAME, NULL, 0), SL_ERR_CLOSED);
    assert_true(sl_ws_conn_close_sent(r->ws));
    expect_out(r, CLOSE_1002, sizeof(CLOSE_1002));
    assert_int_equal(r->nclose, 1);
}

static void unmasked_frame(void **state)
{
    (void)state;
    wire w = {.n = 0};
    frame(&w, 1, WSLAY_BINARY_FRAME,
          "\x00"
          "a",
          2, 1);
    frame(&w, 1, WSLAY_BINARY_FRAME,
          "\x00"
          "evil",
          5, 0);
    frame(&w, 1, WSLAY_BINARY_FRAME,
          "\x00"
          "b",
          2, 1);
    every_split(&w, TEST_MAX_MESSAGE, check_unmasked);
    /* unmasked and empty, and unmasked control frames, too */
    w.n = 0;
    frame(&w, 1, WSLAY_BINARY_FRAME,
          "\x00"
          "a",
          2, 1);
    frame(&w, 1, WSLAY_PING, "", 0, 0);
    every_split(&w, TEST_MAX_MESSAGE, check_unmasked);
}

static void check_too_big(rec *r)
{
    assert_int_equal(r->rv, SL_ERR_TOO_LARGE);
    assert_int_equal(r->nmsg, 0);
    assert_int_equal(r->nclose, 1);
    assert_int_equal(r->code, 1009);
    expect_out(r, CLOSE_1009, sizeof(CLOSE_1009));
}

static void oversized_message(void **state)
{
    (void)state;
    uint8_t big[300];
    memset(big, 'z', sizeof(big));
    wire w = {.n = 0};
    frame(&w, 1, WSLAY_BINARY_FRAME, big, TEST_MAX_MESSAGE + 1, 1);
    every_split(&w, TEST_MAX_MESSAGE, check_too_big);
    /* 16-bit length form */
    w.n = 0;
    frame(&w, 1, WSLAY_BINARY_FRAME, big, sizeof(big), 1);
    every_split(&w, TEST_MAX_MESSAGE, check_too_big);
    /* fragments that only together exceed the limit */
    w.n = 0;
    frame(&w, 0, WSLAY_BINARY_FRAME, big, 40, 1);
    frame(&w, 1, WSLAY_CONTINUATION_FRAME, big, 40, 1);
    every_split(&w, TEST_MAX_MESSAGE, check_too_big);
    /* a 64-bit length announcing 2^62 bytes: refused before any payload */
    w.n = 0;
    raw(&w, "\x82\xff\x40\x00\x00\x00\x00\x00\x00\x00", 10);
    raw(&w, KEY, 4);
    every_split(&w, TEST_MAX_MESSAGE, check_too_big);
}

static void exact_limit_ok(void **state)
{
    (void)state;
    uint8_t big[TEST_MAX_MESSAGE];
    memset(big, 'q', sizeof(big));
    wire w = {.n = 0};
    frame(&w, 0, WSLAY_BINARY_FRAME, big, 30, 1);
    frame(&w, 1, WSLAY_CONTINUATION_FRAME, big, TEST_MAX_MESSAGE - 30, 1);
    rec r;
    rec_open(&r, 0, TEST_MAX_MESSAGE);
    feed(&r, w.b, w.n);
    assert_int_equal(r.rv, SL_OK);
    assert_int_equal(r.nmsg, 1);
    assert_int_equal(r.len[0], TEST_MAX_MESSAGE);
    rec_close(&r);
}

static void check_close(rec *r)
{
    assert_int_equal(r->rv, SL_OK);
    assert_int_equal(r->nmsg, 1);
    assert_int_equal(r->nclose, 1);
    assert_int_equal(r->code, 1000);
    expect_out(r,
               (const uint8_t *)"\x88\x04\x03\xe8"
                                "ok",
               6);
    assert_true(sl_ws_conn_close_sent(r->ws));
    /* garbage after the close is dropped */
    assert_int_equal(sl_ws_conn_recv(r->ws, (const uint8_t *)"\xff\xff\xff\xff", 4), SL_OK);
    assert_int_equal(sl_ws_conn_send_msg(r->ws, WSLAY_TEXT_FRAME, (const uint8_t *)"x", 1),
                     SL_ERR_CLOSED);
    assert_int_equal(sl_ws_conn_close(r->ws, 1000, NULL), SL_ERR_CLOSED);
    assert_int_equal(r->nclose, 1);
    assert_int_equal(r->nmsg, 1);
}

static void close_echoed(void **state)
{
    (void)state;
    wire w = {.n = 0};
    frame(&w, 1, WSLAY_BINARY_FRAME, "\x03", 1, 1);
    frame(&w, 1, WSLAY_CONNECTION_CLOSE,
          "\x03\xe8"
          "ok",
          4, 1);
    raw(&w, "\x12\x7f garbage \x00\x81\x05", 14); /* not even frames */
    frame(&w, 1, WSLAY_BINARY_FRAME, "late", 4, 1);
    every_split(&w, TEST_MAX_MESSAGE, check_close);
}

static void check_close_nocode(rec *r)
{
    assert_int_equal(r->rv, SL_OK);
    assert_int_equal(r->nclose, 1);
    assert_int_equal(r->code, 1005);
    expect_out(r, (const uint8_t *)"\x88\x00", 2);
}

static void close_without_code(void **state)
{
    (void)state;
    wire w = {.n = 0};
    frame(&w, 1, WSLAY_CONNECTION_CLOSE, "", 0, 1);
    every_split(&w, TEST_MAX_MESSAGE, check_close_nocode);
}

static void check_proto_1002(rec *r)
{
    assert_int_equal(r->rv, SL_ERR_PROTO);
    assert_int_equal(r->nmsg, 0);
    assert_int_equal(r->nclose, 1);
    assert_int_equal(r->code, 1002);
    expect_out(r, CLOSE_1002, sizeof(CLOSE_1002));
}

static void check_proto_1007(rec *r)
{
    assert_int_equal(r->rv, SL_ERR_PROTO);
    assert_int_equal(r->nmsg, 0);
    assert_int_equal(r->nclose, 1);
    assert_int_equal(r->code, 1007);
    expect_out(r, (const uint8_t *)"\x88\x02\x03\xef", 4);
}

static void protocol_violations(void **state)
{
    (void)state;
    uint8_t p200[200] = {0};
    wire w = {.n = 0};
    frame(&w, 1, WSLAY_CONTINUATION_FRAME, "x", 1, 1); /* nothing to continue */
    every_split(&w, TEST_MAX_MESSAGE, check_proto_1002);
    w.n = 0;
    frame(&w, 0, WSLAY_TEXT_FRAME, "a", 1, 1); /* new message inside one */
    frame(&w, 1, WSLAY_BINARY_FRAME, "b", 1, 1);
    every_split(&w, TEST_MAX_MESSAGE, check_proto_1002);
    w.n = 0;
    frame(&w, 1, 3, "x", 1, 1); /* reserved data opcode */
    every_split(&w, TEST_MAX_MESSAGE, check_proto_1002);
    w.n = 0;
    frame(&w, 1, 0xb, "x", 1, 1); /* reserved control opcode */
    every_split(&w, TEST_MAX_MESSAGE, check_proto_1002);
    w.n = 0;
    frame(&w, 0, WSLAY_PING, "x", 1, 1); /* fragmented control frame */
    every_split(&w, TEST_MAX_MESSAGE, check_proto_1002);
    w.n = 0;
    frame(&w, 1, WSLAY_PING, p200, 126, 1); /* control frame > 125 */
    every_split(&w, 1000, check_proto_1002);
    w.n = 0;
    frame(&w, 1, WSLAY_BINARY_FRAME, "x", 1, 1);
    w.b[0] |= 0x40; /* RSV1 without an extension */
    every_split(&w, TEST_MAX_MESSAGE, check_proto_1002);
    w.n = 0;
    raw(&w, "\x82\xfe\x00\x05", 4); /* length 5 in the 16-bit form */
    raw(&w, KEY, 4);
    raw(&w, "abcde", 5);
    every_split(&w, TEST_MAX_MESSAGE, check_proto_1002);
    w.n = 0;
    raw(&w, "\x82\xff\x00\x00\x00\x00\x00\x00\x00\x05", 10); /* ... 64-bit form */
    every_split(&w, TEST_MAX_MESSAGE, check_proto_1002);
    w.n = 0;
    frame(&w, 1, WSLAY_CONNECTION_CLOSE, "\x03", 1, 1); /* 1-byte close body */
    every_split(&w, TEST_MAX_MESSAGE, check_proto_1002);
    w.n = 0;
    frame(&w, 1, WSLAY_CONNECTION_CLOSE, "\x03\xe7", 2, 1); /* code 999 */
    every_split(&w, TEST_MAX_MESSAGE, check_proto_1002);
    w.n = 0;
    frame(&w, 1, WSLAY_TEXT_FRAME, "1\xff", 2, 1); /* invalid UTF-8 */
    every_split(&w, TEST_MAX_MESSAGE, check_proto_1007);
}

/* ---- outbound ---- */

static void send_length_forms(void **state)
{
    (void)state;
    static uint8_t payload[70000];
    for (size_t i = 0; i < sizeof(payload); i++)
        payload[i] = (uint8_t)(i * 13 + 1);
    static const struct {
        size_t len;
        int op;
        uint8_t hdr[10];
        size_t hlen;
    } cases[] = {
        {0, WSLAY_BINARY_FRAME, {0x82, 0x00}, 2},
        {5, WSLAY_BINARY_FRAME, {0x82, 0x05}, 2},
        {125, WSLAY_TEXT_FRAME, {0x81, 0x7d}, 2},
        {126, WSLAY_BINARY_FRAME, {0x82, 0x7e, 0x00, 0x7e}, 4},
        {300, WSLAY_TEXT_FRAME, {0x81, 0x7e, 0x01, 0x2c}, 4},
        {65535, WSLAY_BINARY_FRAME, {0x82, 0x7e, 0xff, 0xff}, 4},
        {65536, WSLAY_BINARY_FRAME, {0x82, 0x7f, 0, 0, 0, 0, 0, 0x01, 0x00, 0x00}, 10},
        {70000, WSLAY_BINARY_FRAME, {0x82, 0x7f, 0, 0, 0, 0, 0, 0x01, 0x11, 0x70}, 10},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        rec r;
        rec_open(&r, 0, TEST_MAX_MESSAGE);
        assert_int_equal(sl_ws_conn_send_msg(r.ws, cases[c].op, payload, cases[c].len), SL_OK);
        assert_int_equal(sl_ws_conn_queued(r.ws), cases[c].len);
        assert_int_equal(sl_bufq_len(&r.out), 0); /* nothing before flush */
        size_t n;
        const uint8_t *got = flushed(&r, &n);
        assert_int_equal(n, cases[c].hlen + cases[c].len);
        assert_memory_equal(got, cases[c].hdr, cases[c].hlen);
        if (cases[c].len)
            assert_memory_equal(got + cases[c].hlen, payload, cases[c].len);
        assert_int_equal(sl_ws_conn_queued(r.ws), 0);
        rec_close(&r);
    }
}

/* The direct framing gives the bytes wslay would, at every length form
 * (the message is the prefix byte plus the payload). */
static void send_prefixed_forms(void **state)
{
    (void)state;
    static uint8_t msg[70001];
    for (size_t i = 0; i < sizeof(msg); i++)
        msg[i] = (uint8_t)(i * 7 + 3);
    static const size_t lens[] = {0, 1, 124, 125, 300, 65534, 65535, 70000};
    for (size_t c = 0; c < sizeof(lens) / sizeof(lens[0]); c++) {
        rec d, w;
        rec_open(&d, 0, TEST_MAX_MESSAGE);
        rec_open(&w, 0, TEST_MAX_MESSAGE);
        assert_int_equal(
            sl_ws_conn_send_prefixed(d.ws, WSLAY_BINARY_FRAME, msg[0], msg + 1, lens[c]), SL_OK);
        assert_int_equal(sl_ws_conn_queued(d.ws), 0); /* straight into out */
        assert_int_equal(sl_ws_conn_send_msg(w.ws, WSLAY_BINARY_FRAME, msg, lens[c] + 1), SL_OK);
        size_t n;
        const uint8_t *want = flushed(&w, &n);
        uint8_t *copy = malloc(n);
        assert_non_null(copy);
        memcpy(copy, want, n);
        expect_out(&d, copy, n);
        free(copy);
        rec_close(&d);
        rec_close(&w);
    }
}

/* When wslay holds frames, the text opcode, or after a close: not
 * possible, and nothing is written. */
static void send_prefixed_falls_back(void **state)
{
    (void)state;
    rec r;
    rec_open(&r, 0, TEST_MAX_MESSAGE);
    const uint8_t x = 'x';
    assert_int_equal(sl_ws_conn_send_prefixed(r.ws, WSLAY_TEXT_FRAME, 1, &x, 1), SL_ERR_WOULDBLOCK);
    assert_int_equal(sl_ws_conn_ping(r.ws), SL_OK); /* queued in wslay, not flushed */
    assert_int_equal(sl_ws_conn_send_prefixed(r.ws, WSLAY_BINARY_FRAME, 1, &x, 1),
                     SL_ERR_WOULDBLOCK);
    assert_int_equal(sl_bufq_len(&r.out), 0);
    expect_out(&r, (const uint8_t *)"\x89\x00", 2);
    sl_bufq_consume(&r.out, 2);
    assert_int_equal(sl_ws_conn_send_prefixed(r.ws, WSLAY_BINARY_FRAME, 1, &x, 1), SL_OK);
    expect_out(&r, (const uint8_t *)"\x82\x02\x01x", 4);
    sl_bufq_consume(&r.out, 4);
    assert_int_equal(sl_ws_conn_close(r.ws, 1000, NULL), SL_OK);
    assert_int_equal(sl_ws_conn_flush(r.ws), SL_OK);
    sl_bufq_consume(&r.out, sl_bufq_len(&r.out));
    assert_int_equal(sl_ws_conn_send_prefixed(r.ws, WSLAY_BINARY_FRAME, 1, &x, 1),
                     SL_ERR_WOULDBLOCK);
    assert_int_equal(sl_ws_conn_send_msg(r.ws, WSLAY_BINARY_FRAME, &x, 1), SL_ERR_CLOSED);
    assert_int_equal(sl_bufq_len(&r.out), 0);
    rec_close(&r);
}

/* Client role: the frame is masked with a fresh key, and a server reads
 * back the prefix and payload at every length form, fed whole and (for
 * the shorter ones) one byte at a time. Two frames never share a key. */
static void send_prefixed_masked(void **state)
{
    (void)state;
    static uint8_t msg[1000];
    for (size_t i = 0; i < sizeof(msg); i++)
        msg[i] = (uint8_t)(i * 13 + 5);
    static const size_t lens[] = {0, 1, 2, 3, 7, 124, 125, 126, 300, 999};
    uint8_t last_key[4] = {0};
    for (size_t c = 0; c < sizeof(lens) / sizeof(lens[0]); c++) {
        for (int bytewise = 0; bytewise < 2; bytewise++) {
            rec cl, sv;
            rec_open(&cl, 1, TEST_MAX_MESSAGE);
            rec_open(&sv, 0, REC_MAX_MSG);
            assert_int_equal(
                sl_ws_conn_send_prefixed(cl.ws, WSLAY_BINARY_FRAME, msg[0], msg + 1, lens[c]),
                SL_OK);
            assert_int_equal(sl_ws_conn_queued(cl.ws), 0); /* straight into out */
            size_t n = sl_bufq_len(&cl.out);
            uint8_t *f = malloc(n);
            assert_non_null(f);
            sl_bufq_copyout(&cl.out, f, n);
            size_t hl = lens[c] + 1 < 126 ? 2 : 4;
            assert_int_equal(n, hl + 4 + lens[c] + 1);
            assert_int_equal(f[0], 0x82);
            assert_true(f[1] & 0x80); /* masked */
            assert_memory_not_equal(f + hl, last_key, 4);
            memcpy(last_key, f + hl, 4);
            if (bytewise) {
                for (size_t i = 0; i < n; i++)
                    feed(&sv, f + i, 1);
            } else {
                feed(&sv, f, n);
            }
            assert_int_equal(sv.rv, SL_OK);
            assert_int_equal(sv.nmsg, 1);
            assert_false(sv.is_text[0]);
            assert_int_equal(sv.len[0], lens[c] + 1);
            assert_memory_equal(sv.data[0], msg, lens[c] + 1);
            free(f);
            rec_close(&cl);
            rec_close(&sv);
        }
    }
}

static void send_then_close_keeps_order(void **state)
{
    (void)state;
    rec r;
    rec_open(&r, 0, TEST_MAX_MESSAGE);
    assert_int_equal(sl_ws_conn_send_msg(r.ws, 7, (const uint8_t *)"x", 1), SL_ERR_INVAL);
    assert_int_equal(sl_ws_conn_send_msg(r.ws, WSLAY_BINARY_FRAME, (const uint8_t *)"\x03st", 3),
                     SL_OK);
    assert_false(sl_ws_conn_close_sent(r.ws));
    assert_int_equal(sl_ws_conn_close(r.ws, 1000, "done"), SL_OK);
    assert_int_equal(sl_ws_conn_send_msg(r.ws, WSLAY_BINARY_FRAME, (const uint8_t *)"y", 1),
                     SL_ERR_CLOSED);
    expect_out(&r,
               (const uint8_t *)"\x82\x03\x03st\x88\x06\x03\xe8"
                                "done",
               13);
    assert_true(sl_ws_conn_close_sent(r.ws));
    /* the peer's answering close is reported, not echoed again */
    wire w = {.n = 0};
    frame(&w, 1, WSLAY_CONNECTION_CLOSE, "\x03\xe8", 2, 1);
    feed(&r, w.b, w.n);
    assert_int_equal(r.rv, SL_OK);
    assert_int_equal(r.nclose, 1);
    assert_int_equal(r.code, 1000);
    expect_out(&r,
               (const uint8_t *)"\x82\x03\x03st\x88\x06\x03\xe8"
                                "done",
               13);
    rec_close(&r);
}

static void long_close_reason_truncated(void **state)
{
    (void)state;
    char reason[200];
    memset(reason, 'r', sizeof(reason));
    reason[sizeof(reason) - 1] = '\0';
    reason[122] = (char)0xc3; /* a 2-byte UTF-8 sequence across the cut */
    reason[123] = (char)0xa9;
    rec r;
    rec_open(&r, 0, TEST_MAX_MESSAGE);
    assert_int_equal(sl_ws_conn_close(r.ws, 1011, reason), SL_OK);
    size_t n;
    const uint8_t *got = flushed(&r, &n);
    assert_int_equal(n, 2 + 2 + 122);
    assert_int_equal(got[1], 124);
    assert_memory_equal(got + 4, reason, 122);
    rec_close(&r);
}

static void check_data_before_echo(rec *r)
{
    /* queued data left before the close answer, not dropped behind it */
    assert_int_equal(r->nclose, 1);
    expect_out(r, (const uint8_t *)"\x82\x02\x01z\x82\x02\x01y\x88\x02\x03\xe8", 12);
}

static void on_msg_reply(void *arg, int is_text, uint8_t *data, size_t len)
{
    rec *r = arg;
    rec_on_msg(arg, is_text, data, len);
    assert_int_equal(sl_ws_conn_send_msg(r->ws, WSLAY_BINARY_FRAME, (const uint8_t *)"\x01y", 2),
                     SL_OK);
    if (r->flush_in_cb)
        assert_int_equal(sl_ws_conn_flush(r->ws), SL_OK);
}

static void peer_close_after_queued_data(void **state)
{
    (void)state;
    static const sl_ws_callbacks reply_cb = {on_msg_reply, rec_on_close};
    wire w = {.n = 0};
    frame(&w, 1, WSLAY_BINARY_FRAME, "\x00q", 2, 1);
    frame(&w, 1, WSLAY_CONNECTION_CLOSE, "\x03\xe8", 2, 1);
    for (size_t cut = 0; cut <= 2 * w.n + 1; cut++) {
        rec r;
        memset(&r, 0, sizeof(r));
        r.flush_in_cb = cut > w.n; /* second round: flush inside callbacks */
        sl_bufq_init(&r.out);
        r.ws = sl_ws_conn_new(&reply_cb, &r, &r.out, TEST_MAX_MESSAGE);
        assert_non_null(r.ws);
        assert_int_equal(sl_ws_conn_send_msg(r.ws, WSLAY_BINARY_FRAME, (const uint8_t *)"\x01z", 2),
                         SL_OK);
        size_t at = cut % (w.n + 1);
        feed(&r, w.b, at);
        feed(&r, w.b + at, w.n - at);
        check_data_before_echo(&r);
        rec_close(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(binary_message),
        cmocka_unit_test(send_prefixed_forms),
        cmocka_unit_test(send_prefixed_falls_back),
        cmocka_unit_test(send_prefixed_masked),
        cmocka_unit_test(fragmented_text),
        cmocka_unit_test(ping_pong),
        cmocka_unit_test(unmasked_frame),
        cmocka_unit_test(oversized_message),
        cmocka_unit_test(exact_limit_ok),
        cmocka_unit_test(close_echoed),
        cmocka_unit_test(close_without_code),
        cmocka_unit_test(protocol_violations),
        cmocka_unit_test(send_length_forms),
        cmocka_unit_test(send_then_close_keeps_order),
        cmocka_unit_test(long_close_reason_truncated),
        cmocka_unit_test(peer_close_after_queued_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
