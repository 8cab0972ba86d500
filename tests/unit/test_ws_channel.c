#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <openssl/evp.h>

#include "sluice/error.h"
#include "ws/ws_channel.h"

/* Encodes into a buffer of exactly the announced size (ASan catches any
 * overrun) and returns it. */
static uint8_t *encode(uint8_t ch, const uint8_t *data, size_t len, int b64, size_t *out_len)
{
    size_t n = sl_ws_channel_encoded_len(len, b64);
    uint8_t *dst = malloc(n);
    assert_non_null(dst);
    assert_int_equal(sl_ws_channel_encode(dst, ch, data, len, b64), n);
    *out_len = n;
    return dst;
}

static void binary_layout(void **state)
{
    (void)state;
    size_t n;
    uint8_t *m = encode(0, (const uint8_t *)"foo\n", 4, 0, &n);
    static const uint8_t want[] = {0x00, 0x66, 0x6f, 0x6f, 0x0a};
    assert_int_equal(n, sizeof(want));
    assert_memory_equal(m, want, sizeof(want));
    uint8_t ch = 99, *data = NULL;
    size_t len = 99;
    assert_int_equal(sl_ws_channel_decode(m, n, 0, &ch, &data, &len), SL_OK);
    assert_int_equal(ch, 0);
    assert_int_equal(len, 4);
    assert_ptr_equal(data, m + 1);
    assert_memory_equal(data, "foo\n", 4);
    free(m);
    /* empty data: just the channel byte (the "connected" message) */
    m = encode(1, NULL, 0, 0, &n);
    assert_int_equal(n, 1);
    assert_int_equal(m[0], 1);
    assert_int_equal(sl_ws_channel_decode(m, n, 0, &ch, &data, &len), SL_OK);
    assert_int_equal(ch, 1);
    assert_int_equal(len, 0);
    free(m);
    /* channel 255 (v5 CLOSE signal) passes through */
    uint8_t close_sig[] = {0xff, 0x00};
    assert_int_equal(sl_ws_channel_decode(close_sig, 2, 0, &ch, &data, &len), SL_OK);
    assert_int_equal(ch, 255);
    assert_int_equal(len, 1);
    assert_int_equal(data[0], 0);
}

static void base64_examples(void **state)
{
    (void)state;
    static const struct {
        uint8_t ch;
        const char *data;
        size_t len;
        const char *want;
    } ex[] = {
        {1, "\n", 1, "1Cg=="},  {0, "\x50\x00", 2, "0UAA="}, /* port 80 on channel 0 (§8.1) */
        {2, "foo", 3, "2Zm9v"}, {3, "", 0, "3"},
        {10, "ab", 2, ":YWI="}, /* channel 10 continues as ':' */
    };
    for (size_t i = 0; i < sizeof(ex) / sizeof(ex[0]); i++) {
        size_t n;
        uint8_t *m = encode(ex[i].ch, (const uint8_t *)ex[i].data, ex[i].len, 1, &n);
        assert_int_equal(n, strlen(ex[i].want));
        assert_memory_equal(m, ex[i].want, n);
        uint8_t ch, *data;
        size_t len;
        assert_int_equal(sl_ws_channel_decode(m, n, 1, &ch, &data, &len), SL_OK);
        assert_int_equal(ch, ex[i].ch);
        assert_int_equal(len, ex[i].len);
        assert_memory_equal(data, ex[i].data, len);
        free(m);
    }
}

/* Every length 0..300 (all residues mod 3) over all 256 byte values, in
 * both modes; base64 output is checked against libcrypto's encoder. */
static void roundtrip_all_lengths(void **state)
{
    (void)state;
    uint8_t src[300];
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (uint8_t)(255 - (i * 7) % 256);
    for (int b64 = 0; b64 <= 1; b64++) {
        for (size_t len = 0; len <= sizeof(src); len++) {
            size_t n;
            uint8_t *m = encode((uint8_t)(len % 5), src, len, b64, &n);
            if (b64) {
                unsigned char ref[4 * (sizeof(src) / 3 + 1) + 1];
                int rn = EVP_EncodeBlock(ref, src, (int)len);
                assert_int_equal(n, (size_t)rn + 1);
                assert_memory_equal(m + 1, ref, (size_t)rn);
                assert_int_equal(m[0], '0' + len % 5);
            } else {
                assert_int_equal(n, len + 1);
            }
            uint8_t ch, *data;
            size_t dlen;
            assert_int_equal(sl_ws_channel_decode(m, n, b64, &ch, &data, &dlen), SL_OK);
            assert_int_equal(ch, len % 5);
            assert_int_equal(dlen, len);
            if (len)
                assert_memory_equal(data, src, len);
            free(m);
        }
    }
}

static void all_byte_values(void **state)
{
    (void)state;
    uint8_t all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (uint8_t)i;
    for (int b64 = 0; b64 <= 1; b64++) {
        size_t n;
        uint8_t *m = encode(4, all, sizeof(all), b64, &n);
        uint8_t ch, *data;
        size_t len;
        assert_int_equal(sl_ws_channel_decode(m, n, b64, &ch, &data, &len), SL_OK);
        assert_int_equal(ch, 4);
        assert_int_equal(len, 256);
        assert_memory_equal(data, all, 256);
        free(m);
    }
    /* and every value as the single data byte */
    for (int v = 0; v < 256; v++) {
        uint8_t b = (uint8_t)v;
        size_t n;
        uint8_t *m = encode(1, &b, 1, 1, &n);
        uint8_t ch, *data;
        size_t len;
        assert_int_equal(n, 5);
        assert_int_equal(sl_ws_channel_decode(m, n, 1, &ch, &data, &len), SL_OK);
        assert_int_equal(len, 1);
        assert_int_equal(data[0], b);
        free(m);
    }
}

static int decode_str(const char *s, int b64, uint8_t *ch, size_t *len)
{
    size_t n = strlen(s);
    uint8_t *m = malloc(n ? n : 1);
    assert_non_null(m);
    memcpy(m, s, n);
    uint8_t *data;
    int rv = sl_ws_channel_decode(m, n, b64, ch, &data, len);
    free(m);
    return rv;
}

static void decode_errors(void **state)
{
    (void)state;
    uint8_t ch;
    size_t len;
    uint8_t one = 0;
    uint8_t *data;
    /* empty message, both modes */
    assert_int_equal(sl_ws_channel_decode(&one, 0, 0, &ch, &data, &len), SL_ERR_PROTO);
    assert_int_equal(sl_ws_channel_decode(&one, 0, 1, &ch, &data, &len), SL_ERR_PROTO);
    /* channel digit below '0' */
    assert_int_equal(decode_str("/Cg==", 1, &ch, &len), SL_ERR_PROTO);
    assert_int_equal(decode_str(" ", 1, &ch, &len), SL_ERR_PROTO);
    /* malformed base64 */
    static const char *const bad[] = {
        "1C",    "1Cg=",   "1Cg",   "1C===", "1Cg==Cg==", "1Zm9v\n",
        "1Zm 9", "1Zm9v=", "1=Zm9", "1Z=m9", "1Zm9v!AAA", "1\xc3\xa9\xc3\xa9",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(decode_str(bad[i], 1, &ch, &len), SL_ERR_PROTO);
    /* the same bytes are fine as binary */
    assert_int_equal(decode_str("1C", 0, &ch, &len), SL_OK);
    assert_int_equal(ch, '1');
    assert_int_equal(len, 1);
    /* just the digit: zero bytes on that channel */
    assert_int_equal(decode_str("0", 1, &ch, &len), SL_OK);
    assert_int_equal(ch, 0);
    assert_int_equal(len, 0);
    /* high digits map to high channels; '0'+207 is the top */
    assert_int_equal(decode_str("\xff", 1, &ch, &len), SL_OK);
    assert_int_equal(ch, 255 - '0');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(binary_layout),         cmocka_unit_test(base64_examples),
        cmocka_unit_test(roundtrip_all_lengths), cmocka_unit_test(all_byte_values),
        cmocka_unit_test(decode_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
