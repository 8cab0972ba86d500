#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "sluice/error.h"
#include "ws/ws_conn.h"
#include "ws_rec.h"

/* The client role of sl_ws_conn, against hand-made server frames and
 * against our own server role. */

#define TEST_MAX REC_MAX_MSG

/* Takes everything r wrote (after a flush) into buf; returns the length. */
static size_t take(rec *r, uint8_t *buf, size_t cap)
{
    assert_int_equal(sl_ws_conn_flush(r->ws), SL_OK);
    size_t n = sl_bufq_len(&r->out);
    assert_true(n <= cap);
    sl_bufq_copyout(&r->out, buf, n);
    sl_bufq_consume(&r->out, n);
    return n;
}

/* Moves what `from` wrote into `to`, byte by byte (every split point). */
static void shuttle(rec *from, rec *to)
{
    uint8_t buf[8192];
    size_t n = take(from, buf, sizeof(buf));
    for (size_t i = 0; i < n; i++)
        feed(to, buf + i, 1);
}

/* A server frame: never masked. */
static size_t server_frame(uint8_t *p, int fin, int op, const void *payload, size_t len)
{
    return ws_frame(p, fin, op, payload, len, NULL);
}

static void test_client_frames_are_masked_with_fresh_keys(void **st)
{
    (void)st;
    rec c, s;
    rec_open(&c, 1, TEST_MAX);
    rec_open(&s, 0, TEST_MAX);
    static const uint8_t msg[] = {0x00, 'h', 'e', 'l', 'l', 'o'};
    uint8_t keys[3][4];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(sl_ws_conn_send_msg(c.ws, WSLAY_BINARY_FRAME, msg, sizeof(msg)), SL_OK);
        uint8_t buf[64];
        size_t n = take(&c, buf, sizeof(buf));
        assert_int_equal(n, 2 + 4 + sizeof(msg));
        assert_int_equal(buf[0], 0x82);
        assert_int_equal(buf[1], 0x80 | sizeof(msg)); /* mask bit set */
        memcpy(keys[i], buf + 2, 4);
        /* masked payload is not the plain text */
        assert_memory_not_equal(buf + 6, msg, sizeof(msg));
        for (size_t j = 0; j < n; j++)
            feed(&s, buf + j, 1);
    }
    assert_memory_not_equal(keys[0], keys[1], 4);
    assert_memory_not_equal(keys[1], keys[2], 4);
    assert_int_equal(s.rv, SL_OK);
    assert_int_equal(s.nmsg, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(s.len[i], sizeof(msg));
        assert_memory_equal(s.data[i], msg, sizeof(msg));
    }
    /* two clients do not share a key sequence */
    rec c2;
    rec_open(&c2, 1, TEST_MAX);
    sl_ws_conn_send_msg(c2.ws, WSLAY_BINARY_FRAME, msg, sizeof(msg));
    uint8_t buf[64];
    take(&c2, buf, sizeof(buf));
    assert_memory_not_equal(buf + 2, keys[0], 4);
    rec_close(&c2);
    rec_close(&c);
    rec_close(&s);
}

static void test_server_frames_every_split(void **st)
{
    (void)st;
    uint8_t wire[512];
    size_t n = 0;
    static const uint8_t a[] = {0x01, 'o', 'u', 't'};
    n += server_frame(wire + n, 1, WSLAY_BINARY_FRAME, a, sizeof(a));
    n += server_frame(wire + n, 0, WSLAY_BINARY_FRAME, "\x02", 1); /* fragmented */
    n += server_frame(wire + n, 1, WSLAY_PING, "p", 1);            /* control in between */
    n += server_frame(wire + n, 1, WSLAY_CONTINUATION_FRAME, "err", 3);
    static uint8_t big[300];
    memset(big, 0x41, sizeof(big));
    n += server_frame(wire + n, 1, WSLAY_BINARY_FRAME, big, sizeof(big)); /* 16-bit length */
    for (size_t cut = 0; cut <= n; cut++) {
        rec c;
        rec_open(&c, 1, TEST_MAX);
        if (cut == n) { /* byte by byte */
            for (size_t i = 0; i < n; i++)
                feed(&c, wire + i, 1);
        } else {
            feed(&c, wire, cut);
            feed(&c, wire + cut, n - cut);
        }
        assert_int_equal(c.rv, SL_OK);
        assert_int_equal(c.nmsg, 3);
        assert_int_equal(c.len[0], 4);
        assert_memory_equal(c.data[0], a, 4);
        assert_int_equal(c.len[1], 4);
        assert_memory_equal(c.data[1],
                            "\x02"
                            "err",
                            4);
        assert_int_equal(c.len[2], sizeof(big));
        /* the ping was answered with a masked pong echoing "p" */
        uint8_t out[64];
        size_t m = take(&c, out, sizeof(out));
        assert_int_equal(m, 2 + 4 + 1);
        assert_int_equal(out[0], 0x8a);
        assert_int_equal(out[1], 0x81);
        assert_int_equal(out[6] ^ out[2], 'p');
        rec_close(&c);
    }
}

static void expect_protocol_close(const uint8_t *wire, size_t n, uint16_t code, int err)
{
    rec c;
    rec_open(&c, 1, TEST_MAX);
    feed(&c, wire, n);
    assert_int_equal(c.rv, err);
    assert_int_equal(c.nclose, 1);
    assert_int_equal(c.code, code);
    /* our close frame went out, masked, with the code */
    uint8_t out[64];
    size_t m = take(&c, out, sizeof(out));
    assert_true(m >= 8);
    assert_int_equal(out[0], 0x88);
    assert_int_equal(out[1] & 0x80, 0x80);
    assert_int_equal((out[6] ^ out[2]) << 8 | (out[7] ^ out[3]), code);
    rec_close(&c);
}

static void test_masked_server_frame_is_refused(void **st)
{
    (void)st;
    static const uint8_t masked[] = {0x82, 0x82, 1, 2, 3, 4, 0x01 ^ 1, 'x' ^ 2};
    expect_protocol_close(masked, sizeof(masked), 1002, SL_ERR_PROTO);
    static const uint8_t rsv[] = {0xc2, 0x01, 0x01};
    expect_protocol_close(rsv, sizeof(rsv), 1002, SL_ERR_PROTO);
    uint8_t big[4];
    big[0] = 0x82;
    big[1] = 126;
    big[2] = 0x10; /* 4096 > TEST_MAX */
    big[3] = 0x00;
    expect_protocol_close(big, sizeof(big), 1009, SL_ERR_TOO_LARGE);
}

static void test_ping_pong_with_our_server(void **st)
{
    (void)st;
    rec c, s;
    rec_open(&c, 1, TEST_MAX);
    rec_open(&s, 0, TEST_MAX);
    assert_int_equal(sl_ws_conn_ping(c.ws), SL_OK);
    shuttle(&c, &s); /* the server answers */
    shuttle(&s, &c);
    assert_int_equal(c.npong, 1);
    assert_int_equal(s.rv, SL_OK);
    assert_int_equal(c.rv, SL_OK);
    /* and the other way: the server's ping gets our pong */
    assert_int_equal(sl_ws_conn_ping(s.ws), SL_OK);
    shuttle(&s, &c);
    shuttle(&c, &s);
    assert_int_equal(s.npong, 1);
    rec_close(&c);
    rec_close(&s);
}

static void test_close_handshake_with_our_server(void **st)
{
    (void)st;
    rec c, s;
    rec_open(&c, 1, TEST_MAX);
    rec_open(&s, 0, TEST_MAX);
    static const uint8_t status[] = {0x03, '{', '}'};
    assert_int_equal(sl_ws_conn_send_msg(s.ws, WSLAY_BINARY_FRAME, status, 3), SL_OK);
    assert_int_equal(sl_ws_conn_close(s.ws, 1000, ""), SL_OK);
    shuttle(&s, &c);
    assert_int_equal(c.nmsg, 1);
    assert_int_equal(c.nclose, 1);
    assert_int_equal(c.code, 1000);
    assert_true(sl_ws_conn_close_received(c.ws));
    /* the client echoes the close; later sends fail */
    shuttle(&c, &s);
    assert_int_equal(s.nclose, 1);
    assert_int_equal(s.code, 1000);
    assert_true(sl_ws_conn_close_sent(c.ws));
    assert_int_equal(sl_ws_conn_send_msg(c.ws, WSLAY_BINARY_FRAME, status, 3), SL_ERR_CLOSED);
    assert_int_equal(sl_ws_conn_ping(c.ws), SL_ERR_CLOSED);
    rec_close(&c);
    rec_close(&s);
}

static void test_client_close_first(void **st)
{
    (void)st;
    rec c, s;
    rec_open(&c, 1, TEST_MAX);
    rec_open(&s, 0, TEST_MAX);
    assert_int_equal(sl_ws_conn_close(c.ws, 1000, "bye"), SL_OK);
    shuttle(&c, &s);
    assert_int_equal(s.nclose, 1);
    assert_int_equal(s.code, 1000);
    assert_int_equal(s.rv, SL_OK);
    shuttle(&s, &c);
    assert_int_equal(c.nclose, 1);
    assert_int_equal(c.rv, SL_OK);
    rec_close(&c);
    rec_close(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client_frames_are_masked_with_fresh_keys),
        cmocka_unit_test(test_server_frames_every_split),
        cmocka_unit_test(test_masked_server_frame_is_refused),
        cmocka_unit_test(test_ping_pong_with_our_server),
        cmocka_unit_test(test_close_handshake_with_our_server),
        cmocka_unit_test(test_client_close_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
