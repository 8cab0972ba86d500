/* The programs' one percent codec (src/common/pct.c): grpc-message
 * encoding, lenient and strict decoding, '+' as space, the output bound;
 * every input cut at every byte, every byte value round-tripped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pct.h"

static void test_encode_grpc(void **state)
{
    (void)state;
    char *s = sl_pct_encode_grpc("a%b\n \xc3\xa9~\x7f");
    assert_string_equal(s, "a%25b%0A %C3%A9~%7F");
    free(s);
    s = sl_pct_encode_grpc("");
    assert_string_equal(s, "");
    free(s);
}

static void test_decode_lenient(void **state)
{
    (void)state;
    char out[64];
    const char *in = "a%25b%0A%c3%a9+";
    assert_int_equal(sl_pct_decode(in, strlen(in), out, sizeof out, 0), 7);
    assert_string_equal(out, "a%b\n\xc3\xa9+");
    /* bad escapes stay literal, as gRPC asks of receivers */
    in = "%zz%4%";
    assert_int_equal(sl_pct_decode(in, strlen(in), out, sizeof out, 0), 6);
    assert_string_equal(out, "%zz%4%");
    /* a '%' whose digits lie beyond len stays */
    assert_int_equal(sl_pct_decode("%41", 2, out, sizeof out, 0), 2);
    assert_string_equal(out, "%4");
}

static void test_decode_strict_and_plus(void **state)
{
    (void)state;
    char out[64];
    const unsigned q = SL_PCT_STRICT | SL_PCT_PLUS_SPACE;
    assert_int_equal(sl_pct_decode("a+b%2Bc%2f", 10, out, sizeof out, q), 6);
    assert_string_equal(out, "a b+c/");
    assert_int_equal(sl_pct_decode("a+b", 3, out, sizeof out, SL_PCT_STRICT), 3);
    assert_string_equal(out, "a+b");
    const char *bad[] = {"%", "%4", "%zz", "a%g1", "ok%"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(sl_pct_decode(bad[i], strlen(bad[i]), out, sizeof out, q), -1);
        assert_null(sl_pct_decode_dup(bad[i], strlen(bad[i]), q));
    }
    char *d = sl_pct_decode_dup("x%00y", 5, SL_PCT_STRICT);
    assert_memory_equal(d, "x\0y", 4);
    free(d);
}

/* The output bound: decoding never writes past out[outlen - 1], at every
 * size, and what it keeps is a prefix of the full result. */
static void test_decode_every_output_size(void **state)
{
    (void)state;
    const char *in = "ab%41%42cd";
    char full[16];
    assert_int_equal(sl_pct_decode(in, strlen(in), full, sizeof full, 0), 6);
    for (size_t n = 1; n <= 8; n++) {
        char out[16];
        memset(out, '#', sizeof out);
        long got = sl_pct_decode(in, strlen(in), out, n, 0);
        assert_int_equal(got, n - 1 < 6 ? n - 1 : 6);
        assert_memory_equal(out, full, (size_t)got);
        assert_int_equal(out[got], '\0');
        for (size_t i = n; i < sizeof out; i++)
            assert_int_equal(out[i], '#');
    }
}

/* Every cut of an encoded string: the decoder reads only the len bytes it
 * was given (an escape split by the cut stays literal, or fails strictly),
 * and a cut at an escape boundary decodes to a prefix of the whole. */
static void test_every_cut(void **state)
{
    (void)state;
    const char *plain = "h\xc3\xa9llo %wo\nrld";
    char *enc = sl_pct_encode_grpc(plain);
    size_t len = strlen(enc);
    for (size_t cut = 0; cut <= len; cut++) {
        char *copy = malloc(cut ? cut : 1); /* exact size: ASan sees an overread */
        memcpy(copy, enc, cut);
        char out[64];
        long lenient = sl_pct_decode(copy, cut, out, sizeof out, 0);
        long strict = sl_pct_decode(copy, cut, out, sizeof out, SL_PCT_STRICT);
        const char *pct =
            memchr(enc + (cut >= 2 ? cut - 2 : 0), '%', cut - (cut >= 2 ? cut - 2 : 0));
        bool split = pct != NULL && (size_t)(pct - enc) + 3 > cut;
        assert_true(lenient >= 0);
        if (split) {
            assert_int_equal(strict, -1);
        } else {
            assert_true(strict >= 0);
            assert_memory_equal(out, plain, (size_t)strict);
        }
        free(copy);
    }
    free(enc);
}

static void test_round_trip_all_bytes(void **state)
{
    (void)state;
    char in[256], out[256];
    for (int i = 1; i < 256; i++)
        in[i - 1] = (char)i;
    in[255] = '\0';
    char *enc = sl_pct_encode_grpc(in);
    for (const char *p = enc; *p; p++)
        assert_true(*p >= 0x20 && *p <= 0x7e);
    for (unsigned flags = 0; flags <= SL_PCT_STRICT; flags++) {
        assert_int_equal(sl_pct_decode(enc, strlen(enc), out, sizeof out, flags), 255);
        assert_memory_equal(in, out, 256);
    }
    free(enc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode_grpc),
        cmocka_unit_test(test_decode_lenient),
        cmocka_unit_test(test_decode_strict_and_plus),
        cmocka_unit_test(test_decode_every_output_size),
        cmocka_unit_test(test_every_cut),
        cmocka_unit_test(test_round_trip_all_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
