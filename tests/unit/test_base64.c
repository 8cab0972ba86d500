#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "util/base64.h"

/* RFC 4648 §10 vectors: input, standard encoding. */
static const char *const vectors[][2] = {
    {"", ""},
    {"f", "Zg=="},
    {"fo", "Zm8="},
    {"foo", "Zm9v"},
    {"foob", "Zm9vYg=="},
    {"fooba", "Zm9vYmE="},
    {"foobar", "Zm9vYmFy"},
};

static void rfc4648_standard(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
        const char *in = vectors[i][0], *want = vectors[i][1];
        size_t n = strlen(in);
        char enc[16];
        assert_int_equal(sl_base64_encoded_len(n, 0), strlen(want));
        assert_int_equal(sl_base64_encode(enc, (const uint8_t *)in, n, 0), strlen(want));
        assert_string_equal(enc, want);
        uint8_t dec[16];
        assert_int_equal(sl_base64_decode(dec, want, strlen(want)), (long)n);
        assert_memory_equal(dec, in, n);
    }
}

static void rfc4648_url(void **state)
{
    (void)state;
    /* same vectors, padding removed */
    for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
        const char *in = vectors[i][0];
        char want[16];
        strcpy(want, vectors[i][1]);
        char *eq = strchr(want, '=');
        if (eq)
            *eq = '\0';
        char enc[16];
        assert_int_equal(sl_base64_encoded_len(strlen(in), 1), strlen(want));
        assert_int_equal(sl_base64_encode(enc, (const uint8_t *)in, strlen(in), 1), strlen(want));
        assert_string_equal(enc, want);
    }
    /* the two alphabets differ only in 62 and 63 (RFC 4648 §5) */
    const uint8_t hi[] = {0xfb, 0xff, 0xbf, 0xfe};
    char enc[16];
    sl_base64_encode(enc, hi, sizeof(hi), 0);
    assert_string_equal(enc, "+/+//g==");
    sl_base64_encode(enc, hi, sizeof(hi), 1);
    assert_string_equal(enc, "-_-__g");
    uint8_t dec[8];
    assert_int_equal(sl_base64_decode(dec, "+/+//g==", 8), 4);
    assert_memory_equal(dec, hi, 4);
    /* every 6-bit value once, in order */
    uint8_t all[48];
    for (int i = 0; i < 16; i++) {
        uint32_t v = (uint32_t)(4 * i) << 18 | (uint32_t)(4 * i + 1) << 12 |
                     (uint32_t)(4 * i + 2) << 6 | (uint32_t)(4 * i + 3);
        all[3 * i] = (uint8_t)(v >> 16);
        all[3 * i + 1] = (uint8_t)(v >> 8);
        all[3 * i + 2] = (uint8_t)v;
    }
    char out[65];
    sl_base64_encode(out, all, sizeof(all), 1);
    assert_string_equal(out, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_");
    sl_base64_encode(out, all, sizeof(all), 0);
    assert_string_equal(out, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
}

/* URL-safe, unpadded text converted to the standard, padded form. */
static size_t url_to_std(char *dst, const char *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i] == '-' ? '+' : src[i] == '_' ? '/' : src[i];
    while (n % 4)
        dst[n++] = '=';
    dst[n] = '\0';
    return n;
}

static void round_trip_every_length(void **state)
{
    (void)state;
    enum { MAXN = 300 };
    uint8_t src[MAXN], dec[MAXN + 3];
    char enc[MAXN / 3 * 4 + 8], std[MAXN / 3 * 4 + 8];
    srand(4648);
    for (size_t n = 0; n <= MAXN; n++) {
        for (size_t i = 0; i < n; i++)
            src[i] = (uint8_t)rand();
        for (int url = 0; url <= 1; url++) {
            size_t el = sl_base64_encoded_len(n, url);
            memset(enc, '#', sizeof(enc));
            assert_int_equal(sl_base64_encode(enc, src, n, url), el);
            assert_int_equal(enc[el], '\0');
            assert_int_equal(enc[el + 1], '#'); /* nothing written past the NUL */
            size_t sl = url ? url_to_std(std, enc, el) : el;
            const char *in = url ? std : enc;
            assert_int_equal(sl, (n + 2) / 3 * 4);
            memset(dec, 0xee, sizeof(dec));
            assert_int_equal(sl_base64_decode(dec, in, sl), (long)n);
            assert_memory_equal(dec, src, n);
            assert_int_equal(dec[n], 0xee); /* exact output size */
        }
    }
}

/* Decodes from a heap copy of exactly len bytes, so ASan catches over-reads. */
static long decode_exact(const char *s)
{
    size_t len = strlen(s);
    char *copy = malloc(len ? len : 1);
    memcpy(copy, s, len);
    uint8_t dst[64];
    long r = sl_base64_decode(dst, copy, len);
    free(copy);
    return r;
}

static void malformed(void **state)
{
    (void)state;
    const char *bad[] = {
        "Zg=",      "Zg",       "Z",        "Zm9vY", "Zm9vYmFy=", /* bad length */
        "Zm9v!mFy", "Zm9v YmF", "Zm9-",     "Zm9_",  "Zm9\x80",   /* bad char */
        "Zg==Zm9v", "Zm8=Zm9v", "Zg==Zg==",                       /* padding inside */
        "====",     "Z===",     "Zm=v",     "=m9v",  "Zg=a",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(decode_exact(bad[i]), -1);
    assert_int_equal(decode_exact(""), 0);
    assert_int_equal(decode_exact("Zm9vYmFy"), 6);
    /* an embedded NUL is a bad character, not the end of input */
    uint8_t dst[8];
    assert_int_equal(sl_base64_decode(dst, "Zm\0v", 4), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rfc4648_standard),
        cmocka_unit_test(rfc4648_url),
        cmocka_unit_test(round_trip_every_length),
        cmocka_unit_test(malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
