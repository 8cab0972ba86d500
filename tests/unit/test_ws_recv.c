/* The receive path of binary messages (ws_conn.c unmasks them itself,
 * ws_mask.c 8 bytes a step): checked against frames masked byte by byte
 * (ws_frame) for payload lengths around every length form and word
 * boundary, fed at many splits and input alignments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sluice/error.h"
#include "ws/ws_conn.h"
#include "ws/ws_mask.h"
#include "ws_rec.h"

static const uint8_t KEY_A[4] = {0x37, 0xfa, 0x21, 0x3d};
static const uint8_t KEY_B[4] = {0x01, 0x80, 0xfe, 0x5c};

/* ---- the word-at-a-time unmask against the byte-by-byte definition ---- */

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (uint8_t)(seed >> 16);
    }
}

static void unmask_reference(void **state)
{
    (void)state;
    uint8_t src[96 + 8], dst[96 + 8], ref[96];
    fill(src, sizeof(src), 7);
    for (size_t n = 0; n <= 96; n++)
        for (uint64_t phase = 0; phase < 8; phase++)
            for (size_t so = 0; so < 8; so++)
                for (size_t d = 0; d < 8; d += 3) {
                    for (size_t i = 0; i < n; i++)
                        ref[i] = src[so + i] ^ KEY_A[(phase + i) % 4];
                    memset(dst, 0xee, sizeof(dst));
                    sl_ws_unmask(dst + d, src + so, n, KEY_A, phase);
                    assert_memory_equal(dst + d, ref, n);
                    if (d + n < sizeof(dst))
                        assert_int_equal(dst[d + n], 0xee); /* nothing past n */
                }
    /* in place, at an odd address and a large phase */
    uint8_t buf[96];
    memcpy(buf, src, sizeof(buf));
    sl_ws_unmask(buf + 3, buf + 3, 90, KEY_B, (1ull << 40) + 2);
    for (size_t i = 0; i < 90; i++)
        assert_int_equal(buf[3 + i], src[3 + i] ^ KEY_B[(2 + i) % 4]);
}

/* ---- whole connections: what on_msg sees ---- */

#define MAX_EXPECT 4

typedef struct want {
    const uint8_t *msg[MAX_EXPECT];
    size_t len[MAX_EXPECT];
    int n;   /* messages expected */
    int got; /* messages delivered, each matching */
} want;

static void on_msg(void *arg, int is_text, uint8_t *data, size_t len)
{
    want *w = arg;
    assert_true(w->got < w->n);
    assert_int_equal(is_text, 0);
    assert_non_null(data);
    assert_int_equal(len, w->len[w->got]);
    assert_memory_equal(data, w->msg[w->got], len);
    w->got++;
}

static void on_close(void *arg, uint16_t code)
{
    (void)arg;
    fail_msg("unexpected close %u", code);
}

static const sl_ws_callbacks CB = {.on_msg = on_msg, .on_close = on_close};

/* Feeds wire in pieces of the sizes in cuts (cycling; 0 ends the list),
 * from a copy at offset align, to a fresh connection; checks every expected
 * message arrived and what was written (pongs) equals out/out_len. */
static void run(const uint8_t *wire, size_t n, size_t align, const size_t *cuts, int client,
                want *w, const uint8_t *out, size_t out_len)
{
    uint8_t *copy = malloc(n + 8);
    assert_non_null(copy);
    memcpy(copy + align, wire, n);
    sl_bufq q;
    sl_bufq_init(&q);
    sl_ws_conn *ws =
        client ? sl_ws_conn_new_client(&CB, w, &q, 1 << 20) : sl_ws_conn_new(&CB, w, &q, 1 << 20);
    assert_non_null(ws);
    w->got = 0;
    size_t off = 0, k = 0;
    while (off < n) {
        if (cuts[k] == 0)
            k = 0;
        size_t step = cuts[k++];
        if (step > n - off)
            step = n - off;
        assert_int_equal(sl_ws_conn_recv(ws, copy + align + off, step), SL_OK);
        off += step;
    }
    assert_int_equal(w->got, w->n);
    assert_int_equal(sl_ws_conn_flush(ws), SL_OK);
    assert_int_equal(sl_bufq_len(&q), out_len);
    if (out_len) {
        uint8_t got[64];
        assert_true(out_len <= sizeof(got));
        sl_bufq_copyout(&q, got, out_len);
        assert_memory_equal(got, out, out_len);
    }
    sl_ws_conn_free(ws);
    sl_bufq_fini(&q);
    free(copy);
}

/* Two-way cuts at every byte for short wires, near both ends and every
 * 4093 bytes for long ones; then byte by byte and in runs of odd sizes,
 * each at four input alignments. */
static void every_split(const uint8_t *wire, size_t n, int client, want *w, const uint8_t *out,
                        size_t out_len)
{
    for (size_t cut = 0; cut <= n; cut++) {
        if (n > 300 && cut > 40 && cut + 40 < n && cut % 4093)
            continue;
        size_t cuts[] = {cut ? cut : n, n, 0};
        run(wire, n, cut % 8, cuts, client, w, out, out_len);
    }
    static const size_t patterns[][6] = {
        {1, 0}, {3, 5, 7, 0}, {13, 1, 2, 0}, {4096, 0}, {65533, 9, 0}};
    for (size_t p = 0; p < sizeof(patterns) / sizeof(patterns[0]); p++)
        for (size_t align = 0; align < 8; align += 3)
            run(wire, n, align, patterns[p], client, w, out, out_len);
}

static void payload_lengths(void **state)
{
    (void)state;
    static const size_t lens[] = {0,  1,  2,  3,   4,   5,   7,     8,    9,
                                  15, 16, 17, 125, 126, 127, 65535, 65536};
    size_t max = 65536;
    uint8_t *payload = malloc(max);
    uint8_t *wire = malloc(max + 64);
    assert_non_null(payload);
    assert_non_null(wire);
    fill(payload, max, 42);
    for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
        size_t len = lens[l];
        /* the frame, then a short one with another key: the cut between
         * them and the key change are exercised too */
        size_t n = ws_frame(wire, 1, WSLAY_BINARY_FRAME, payload, len, KEY_A);
        n += ws_frame(wire + n, 1, WSLAY_BINARY_FRAME, payload + 1, 11, KEY_B);
        want w = {.msg = {payload, payload + 1}, .len = {len, 11}, .n = 2};
        every_split(wire, n, 0, &w, NULL, 0);
        /* the client role: the same frames unmasked, as a server sends */
        n = ws_frame(wire, 1, WSLAY_BINARY_FRAME, payload, len, NULL);
        n += ws_frame(wire + n, 1, WSLAY_BINARY_FRAME, payload + 1, 11, NULL);
        every_split(wire, n, 1, &w, NULL, 0);
    }
    free(payload);
    free(wire);
}

/* A binary message in three fragments of different keys, a ping between
 * them: one message, one pong, at every split. */
static void fragmented_with_ping(void **state)
{
    (void)state;
    static const size_t sizes[][3] = {{1, 0, 6}, {9, 125, 3}, {126, 7, 65536}};
    static const uint8_t KEY_C[4] = {0xaa, 0x00, 0x55, 0xff};
    uint8_t *payload = malloc(70000), *wire = malloc(70100);
    assert_non_null(payload);
    assert_non_null(wire);
    fill(payload, 70000, 9);
    for (size_t t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++) {
        const size_t *s = sizes[t];
        size_t n = ws_frame(wire, 0, WSLAY_BINARY_FRAME, payload, s[0], KEY_A);
        n += ws_frame(wire + n, 1, WSLAY_PING, "hb", 2, KEY_C);
        n += ws_frame(wire + n, 0, WSLAY_CONTINUATION_FRAME, payload + s[0], s[1], KEY_B);
        n += ws_frame(wire + n, 1, WSLAY_CONTINUATION_FRAME, payload + s[0] + s[1], s[2], KEY_C);
        want w = {.msg = {payload}, .len = {s[0] + s[1] + s[2]}, .n = 1};
        every_split(wire, n, 0, &w, (const uint8_t *)"\x8a\x02hb", 4);
    }
    free(payload);
    free(wire);
}

/* The limit counts every fragment of a binary message: exactly max passes,
 * one more byte (after a ping) is refused with 1009 before its payload. */
typedef struct limit_rec {
    int nmsg, nclose;
    size_t len;
    uint16_t code;
} limit_rec;

static void limit_msg(void *arg, int is_text, uint8_t *data, size_t len)
{
    limit_rec *r = arg;
    (void)is_text;
    (void)data;
    r->nmsg++;
    r->len = len;
}

static void limit_close(void *arg, uint16_t code)
{
    limit_rec *r = arg;
    r->nclose++;
    r->code = code;
}

static void limit_enforced(void **state)
{
    (void)state;
    static const sl_ws_callbacks lcb = {.on_msg = limit_msg, .on_close = limit_close};
    enum { MAX = 1000 };
    uint8_t payload[MAX + 1] = {0};
    for (int over = 0; over <= 1; over++) {
        uint8_t wire[2 * MAX];
        size_t n = ws_frame(wire, 0, WSLAY_BINARY_FRAME, payload, 400, KEY_A);
        n += ws_frame(wire + n, 1, WSLAY_PING, "", 0, KEY_B);
        n += ws_frame(wire + n, 1, WSLAY_CONTINUATION_FRAME, payload, MAX - 400 + over, KEY_B);
        for (size_t cut = 0; cut <= n; cut++) {
            limit_rec r = {0};
            sl_bufq q;
            sl_bufq_init(&q);
            sl_ws_conn *ws = sl_ws_conn_new(&lcb, &r, &q, MAX);
            assert_non_null(ws);
            int a = sl_ws_conn_recv(ws, wire, cut);
            int b = sl_ws_conn_recv(ws, wire + cut, n - cut);
            if (over) {
                assert_int_equal(a == SL_OK ? b : a, SL_ERR_TOO_LARGE);
                assert_int_equal(r.nmsg, 0);
                assert_int_equal(r.nclose, 1);
                assert_int_equal(r.code, 1009);
                /* the pong, then the close */
                assert_int_equal(sl_ws_conn_flush(ws), SL_OK);
                uint8_t got[6];
                assert_int_equal(sl_bufq_len(&q), 6);
                sl_bufq_copyout(&q, got, 6);
                assert_memory_equal(got, "\x8a\x00\x88\x02\x03\xf1", 6);
            } else {
                assert_int_equal(a, SL_OK);
                assert_int_equal(b, SL_OK);
                assert_int_equal(r.nmsg, 1);
                assert_int_equal(r.len, MAX);
                assert_int_equal(r.nclose, 0);
            }
            sl_ws_conn_free(ws);
            sl_bufq_fini(&q);
        }
    }
}

/* A text frame inside a fragmented binary message: 1002, and the text
 * goes nowhere. */
static void text_inside_binary(void **state)
{
    (void)state;
    rec r;
    uint8_t wire[64];
    size_t n = ws_frame(wire, 0, WSLAY_BINARY_FRAME, "ab", 2, KEY_A);
    n += ws_frame(wire + n, 1, WSLAY_TEXT_FRAME, "x", 1, KEY_A);
    rec_open(&r, 0, 64);
    feed(&r, wire, n);
    assert_int_equal(r.rv, SL_ERR_PROTO);
    assert_int_equal(r.nmsg, 0);
    assert_int_equal(r.nclose, 1);
    assert_int_equal(r.code, 1002);
    rec_close(&r);
}

/* Binary and text messages interleave in order: the text one still goes
 * through wslay (its UTF-8 checked), the binary ones around it do not. */
static void binary_text_order(void **state)
{
    (void)state;
    rec r;
    uint8_t wire[128];
    size_t n = ws_frame(wire, 1, WSLAY_BINARY_FRAME, "one", 3, KEY_A);
    n += ws_frame(wire + n, 0, WSLAY_TEXT_FRAME, "tw", 2, KEY_B);
    n += ws_frame(wire + n, 1, WSLAY_CONTINUATION_FRAME, "o", 1, KEY_A);
    n += ws_frame(wire + n, 1, WSLAY_BINARY_FRAME, "three", 5, KEY_B);
    n += ws_frame(wire + n, 1, WSLAY_TEXT_FRAME, "\xff", 1, KEY_A); /* invalid UTF-8 */
    for (size_t cut = 0; cut <= n; cut++) {
        rec_open(&r, 0, 64);
        feed(&r, wire, cut);
        feed(&r, wire + cut, n - cut);
        assert_int_equal(r.nmsg, 3);
        assert_int_equal(r.is_text[0], 0);
        assert_memory_equal(r.data[0], "one", 3);
        assert_int_equal(r.is_text[1], 1);
        assert_int_equal(r.len[1], 3);
        assert_memory_equal(r.data[1], "two", 3);
        assert_int_equal(r.is_text[2], 0);
        assert_memory_equal(r.data[2], "three", 5);
        assert_int_equal(r.rv, SL_ERR_PROTO);
        assert_int_equal(r.code, 1007);
        rec_close(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unmask_reference),     cmocka_unit_test(payload_lengths),
        cmocka_unit_test(fragmented_with_ping), cmocka_unit_test(limit_enforced),
        cmocka_unit_test(text_inside_binary),   cmocka_unit_test(binary_text_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
