#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "remotecommand/rc_resize.h"
#include "sluice/error.h"

typedef struct seen {
    sl_term_size s[16];
    int n;
} seen;

static void on_size(void *arg, sl_term_size size)
{
    seen *v = arg;
    if (v->n < 16)
        v->s[v->n] = size;
    v->n++;
}

/* Escapes in keys and in ignored values: a cut right after a backslash
 * must wait for the rest, not fail (found by fuzz_rc_resize). */
static const char stream[] = "{\"Width\":80,\"Height\":24}\n{\"Wi\\u0064th\":132,\"Height\":43}\n"
                             "  {\"x\\\"}\":\"a\\\\{\",\"Height\":7, \"Width\":9}"
                             "{\"Width\":65535,\"Height\":0}\n";

static void check_all(const seen *v)
{
    assert_int_equal(v->n, 4);
    assert_int_equal(v->s[0].width, 80);
    assert_int_equal(v->s[0].height, 24);
    assert_int_equal(v->s[1].width, 132);
    assert_int_equal(v->s[1].height, 43);
    assert_int_equal(v->s[2].width, 9);
    assert_int_equal(v->s[2].height, 7);
    assert_int_equal(v->s[3].width, 65535);
    assert_int_equal(v->s[3].height, 0);
}

static void every_split(void **state)
{
    (void)state;
    size_t len = strlen(stream);
    for (size_t a = 0; a <= len; a++) {
        for (size_t b = a; b <= len; b++) {
            sl_rc_resize r;
            seen v = {0};
            sl_rc_resize_init(&r);
            const uint8_t *p = (const uint8_t *)stream;
            assert_int_equal(sl_rc_resize_feed(&r, p, a, on_size, &v), SL_OK);
            assert_int_equal(sl_rc_resize_feed(&r, p + a, b - a, on_size, &v), SL_OK);
            assert_int_equal(sl_rc_resize_feed(&r, p + b, len - b, on_size, &v), SL_OK);
            check_all(&v);
        }
    }
}

static void byte_by_byte(void **state)
{
    (void)state;
    sl_rc_resize r;
    seen v = {0};
    sl_rc_resize_init(&r);
    for (size_t i = 0; i < strlen(stream); i++)
        assert_int_equal(sl_rc_resize_feed(&r, (const uint8_t *)stream + i, 1, on_size, &v), SL_OK);
    check_all(&v);
}

static void malformed_stops_for_good(void **state)
{
    (void)state;
    static const char *bad[] = {
        "{\"Width\":-1,\"Height\":2}",
        "{\"Width\":65536,\"Height\":2}",
        "[1,2]",
        "{\"Width\":\"80\"}",
        "nonsense",
        "{\"Width\":1,,}",
        "\x01",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sl_rc_resize r;
        seen v = {0};
        sl_rc_resize_init(&r);
        const char *good = "{\"Width\":1,\"Height\":2}";
        assert_int_equal(sl_rc_resize_feed(&r, (const uint8_t *)good, strlen(good), on_size, &v),
                         SL_OK);
        assert_int_equal(v.n, 1);
        assert_int_equal(
            sl_rc_resize_feed(&r, (const uint8_t *)bad[i], strlen(bad[i]), on_size, &v),
            SL_ERR_PROTO);
        /* later valid input is ignored, as the kubelet stops decoding */
        assert_int_equal(sl_rc_resize_feed(&r, (const uint8_t *)good, strlen(good), on_size, &v),
                         SL_ERR_PROTO);
        assert_int_equal(v.n, 1);
    }
}

static void oversized_object_is_refused(void **state)
{
    (void)state;
    sl_rc_resize r;
    seen v = {0};
    sl_rc_resize_init(&r);
    char big[SL_RC_RESIZE_MAX_OBJECT + 10];
    big[0] = '{';
    memset(big + 1, ' ', sizeof(big) - 1);
    assert_int_equal(sl_rc_resize_feed(&r, (const uint8_t *)big, sizeof(big), on_size, &v),
                     SL_ERR_PROTO);
    assert_int_equal(v.n, 0);
}

/* Go decodes field names case-insensitively, preferring the exact case. */
static void keys_match_like_go(void **state)
{
    (void)state;
    sl_rc_resize r;
    seen v = {0};
    sl_rc_resize_init(&r);
    const char *in = "{\"width\":5,\"HEIGHT\":6}{\"width\":1,\"Width\":2,\"Height\":3}";
    assert_int_equal(sl_rc_resize_feed(&r, (const uint8_t *)in, strlen(in), on_size, &v), SL_OK);
    assert_int_equal(v.n, 2);
    assert_int_equal(v.s[0].width, 5);
    assert_int_equal(v.s[0].height, 6);
    assert_int_equal(v.s[1].width, 2);
    assert_int_equal(v.s[1].height, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_split),
        cmocka_unit_test(byte_by_byte),
        cmocka_unit_test(malformed_stops_for_good),
        cmocka_unit_test(oversized_object_is_refused),
        cmocka_unit_test(keys_match_like_go),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
