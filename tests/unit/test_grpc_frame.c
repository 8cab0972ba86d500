/* gRPC Length-Prefixed-Message decoder (every split point), prefix writer,
 * status names and grpc-message percent-encoding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "grpc/grpc_frame.h"
#include "grpc/grpc_status.h"
#include "sluice/error.h"

#define MAX_MSGS 8

typedef struct got {
    int n;
    uint8_t *msg[MAX_MSGS];
    size_t len[MAX_MSGS];
    int err;
} got;

/* Feeds one piece; collects every message; records the first error. */
static void feed(sl_grpc_decoder *d, const uint8_t *p, size_t len, got *g)
{
    size_t off = 0;
    while (!g->err && off < len) {
        size_t used;
        int rc = sl_grpc_decoder_feed(d, p + off, len - off, &used);
        assert_true(used <= len - off);
        off += used;
        if (rc < 0) {
            g->err = rc;
        } else if (rc == 1) {
            assert_true(g->n < MAX_MSGS);
            assert_int_equal(sl_grpc_decoder_take(d, &g->msg[g->n], &g->len[g->n]), SL_OK);
            g->n++;
        } else {
            assert_int_equal(off, len); /* 0 means all input consumed */
        }
    }
}

static void got_free(got *g)
{
    for (int i = 0; i < g->n; i++)
        free(g->msg[i]);
    memset(g, 0, sizeof(*g));
}

static size_t put_msg(uint8_t *out, const uint8_t *m, uint32_t len)
{
    sl_grpc_frame_prefix(out, len);
    if (len)
        memcpy(out + SL_GRPC_PREFIX_LEN, m, len);
    return SL_GRPC_PREFIX_LEN + len;
}

/* Three messages: empty, "hello", 700 bytes (beyond the first alloc). */
static size_t sample(uint8_t *buf, uint8_t *big)
{
    for (int i = 0; i < 700; i++)
        big[i] = (uint8_t)(i * 7);
    size_t n = put_msg(buf, NULL, 0);
    n += put_msg(buf + n, (const uint8_t *)"hello", 5);
    n += put_msg(buf + n, big, 700);
    return n;
}

static void check_sample(const got *g, const uint8_t *big)
{
    assert_int_equal(g->err, 0);
    assert_int_equal(g->n, 3);
    assert_null(g->msg[0]);
    assert_int_equal(g->len[0], 0);
    assert_int_equal(g->len[1], 5);
    assert_memory_equal(g->msg[1], "hello", 5);
    assert_int_equal(g->len[2], 700);
    assert_memory_equal(g->msg[2], big, 700);
}

static void test_every_two_way_split(void **state)
{
    (void)state;
    uint8_t buf[1024], big[700];
    size_t n = sample(buf, big);
    for (size_t cut = 0; cut <= n; cut++) {
        sl_grpc_decoder d;
        got g = {0};
        sl_grpc_decoder_init(&d, 1024);
        feed(&d, buf, cut, &g);
        feed(&d, buf + cut, n - cut, &g);
        check_sample(&g, big);
        assert_true(sl_grpc_decoder_idle(&d));
        got_free(&g);
        sl_grpc_decoder_fini(&d);
    }
}

static void test_byte_by_byte(void **state)
{
    (void)state;
    uint8_t buf[1024], big[700];
    size_t n = sample(buf, big);
    sl_grpc_decoder d;
    got g = {0};
    sl_grpc_decoder_init(&d, 1024);
    /* Each message is complete exactly when its last byte arrives. */
    for (size_t i = 0; i < n; i++) {
        feed(&d, buf + i, 1, &g);
        int want = (i + 1 >= 5) + (i + 1 >= 15) + (i + 1 >= n);
        assert_int_equal(g.n, want);
    }
    check_sample(&g, big);
    got_free(&g);
    sl_grpc_decoder_fini(&d);
}

static void test_one_call_stops_after_message(void **state)
{
    (void)state;
    uint8_t buf[1024], big[700];
    size_t n = sample(buf, big);
    sl_grpc_decoder d;
    size_t used;
    sl_grpc_decoder_init(&d, 1024);
    /* The empty message is complete after its 5 bytes; the rest waits. */
    assert_int_equal(sl_grpc_decoder_feed(&d, buf, n, &used), 1);
    assert_int_equal(used, SL_GRPC_PREFIX_LEN);
    /* Not taken yet: feeding more consumes nothing. */
    assert_int_equal(sl_grpc_decoder_feed(&d, buf + used, n - used, &used), 1);
    assert_int_equal(used, 0);
    sl_grpc_decoder_fini(&d);
}

/* An error prefix at every split gives the same error, and sticks. */
static void expect_error(const uint8_t *buf, size_t n, uint32_t max, int err)
{
    for (size_t cut = 0; cut <= n; cut++) {
        sl_grpc_decoder d;
        got g = {0};
        sl_grpc_decoder_init(&d, max);
        feed(&d, buf, cut, &g);
        feed(&d, buf + cut, n - cut, &g);
        assert_int_equal(g.err, err);
        size_t used;
        assert_int_equal(sl_grpc_decoder_feed(&d, buf, 1, &used), err);
        assert_int_equal(used, 0);
        got_free(&g);
        sl_grpc_decoder_fini(&d);
    }
}

static void test_compressed_flag(void **state)
{
    (void)state;
    uint8_t buf[16];
    size_t n = put_msg(buf, (const uint8_t *)"abc", 3);
    buf[0] = 1;
    expect_error(buf, n, 1024, SL_ERR_UNSUPPORTED);
    buf[0] = 2;
    expect_error(buf, n, 1024, SL_ERR_PROTO);
    buf[0] = 0x80;
    expect_error(buf, n, 1024, SL_ERR_PROTO);
}

static void test_too_large(void **state)
{
    (void)state;
    uint8_t buf[128] = {0};
    size_t n = put_msg(buf, buf + 64, 11);
    expect_error(buf, n, 10, SL_ERR_TOO_LARGE);
    /* Exactly the maximum is fine. */
    sl_grpc_decoder d;
    got g = {0};
    sl_grpc_decoder_init(&d, 11);
    feed(&d, buf, n, &g);
    assert_int_equal(g.err, 0);
    assert_int_equal(g.n, 1);
    got_free(&g);
    sl_grpc_decoder_fini(&d);
    /* 0xffffffff announced: rejected on the prefix alone. */
    uint8_t huge[5] = {0, 0xff, 0xff, 0xff, 0xff};
    expect_error(huge, 5, SL_GRPC_DEFAULT_MAX_RECV_MESSAGE, SL_ERR_TOO_LARGE);
}

/* A peer announcing a big message costs only what it sent. */
static void test_lazy_allocation(void **state)
{
    (void)state;
    uint8_t prefix[5], data[100] = {0};
    sl_grpc_frame_prefix(prefix, 16u * 1024 * 1024);
    sl_grpc_decoder d;
    got g = {0};
    sl_grpc_decoder_init(&d, SL_GRPC_DEFAULT_MAX_RECV_MESSAGE);
    feed(&d, prefix, 5, &g);
    feed(&d, data, sizeof(data), &g);
    assert_int_equal(g.n, 0);
    assert_true(d.cap <= SL_GRPC_DECODER_MIN_ALLOC);
    size_t have, want;
    sl_grpc_decoder_progress(&d, &have, &want);
    assert_int_equal(have, 105);
    assert_int_equal(want, 5 + 16u * 1024 * 1024);
    assert_false(sl_grpc_decoder_idle(&d));
    sl_grpc_decoder_fini(&d);
}

static void test_idle_and_progress(void **state)
{
    (void)state;
    sl_grpc_decoder d;
    size_t have, want, used;
    uint8_t p[5];
    sl_grpc_frame_prefix(p, 3);
    sl_grpc_decoder_init(&d, 100);
    assert_true(sl_grpc_decoder_idle(&d));
    assert_int_equal(sl_grpc_decoder_feed(&d, p, 2, &used), 0);
    assert_false(sl_grpc_decoder_idle(&d));
    sl_grpc_decoder_progress(&d, &have, &want);
    assert_int_equal(have, 2);
    assert_int_equal(want, 5);
    uint8_t *m;
    size_t len;
    assert_int_equal(sl_grpc_decoder_take(&d, &m, &len), SL_ERR_STATE);
    sl_grpc_decoder_fini(&d);
}

static void test_prefix_bytes(void **state)
{
    (void)state;
    uint8_t p[5];
    sl_grpc_frame_prefix(p, 0x01020304);
    uint8_t want[5] = {0, 1, 2, 3, 4};
    assert_memory_equal(p, want, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_two_way_split),
        cmocka_unit_test(test_byte_by_byte),
        cmocka_unit_test(test_one_call_stops_after_message),
        cmocka_unit_test(test_compressed_flag),
        cmocka_unit_test(test_too_large),
        cmocka_unit_test(test_lazy_allocation),
        cmocka_unit_test(test_idle_and_progress),
        cmocka_unit_test(test_prefix_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
