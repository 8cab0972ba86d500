#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <zlib.h>

#include "sluice/error.h"
#include "spdy_golden.h"
#include "spdy/spdy_zlib.h"

/* Compressed NV blocks of the golden vectors, protocol notes §4.4. */
static const uint8_t c2s_block1[] = {
    0x78, 0xf9, 0xe3, 0xc6, 0xa7, 0xc2, 0x62, 0x60, 0x60, 0x60, 0x04, 0xa7, 0xb3, 0x92, 0xa2, 0xd4,
    0xc4, 0x5c, 0x68, 0x51, 0xc2, 0x9a, 0x0a, 0x0a, 0x68, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff};
static const uint8_t c2s_block2[] = {0xc2, 0x2a, 0xc5, 0x56, 0x5c, 0x92, 0x92, 0x5f,
                                     0x5a, 0x02, 0x00, 0x00, 0x00, 0xff, 0xff};
static const uint8_t s2c_block1[] = {0x78, 0xf9, 0xe3, 0xc6, 0xa7, 0xc2, 0x62, 0x60,
                                     0x60, 0x60, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff};
static const uint8_t s2c_block2[] = {0x02, 0x61, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff};

#define NV(n, v)                                                                                   \
    {                                                                                              \
        n, sizeof(n) - 1, v, sizeof(v) - 1                                                         \
    }

static void dictionary(void **state)
{
    (void)state;
    assert_int_equal(sizeof(sl_spdy_dict), 1423);
    uLong a = adler32(adler32(0L, Z_NULL, 0), sl_spdy_dict, SL_SPDY_DICT_LEN);
    assert_int_equal(a, 0xE3C6A7C2u);
    assert_memory_equal(sl_spdy_dict, "\0\0\0\7options\0\0\0\4head", 19);
    assert_memory_equal(sl_spdy_dict + SL_SPDY_DICT_LEN - 6, "enq=0.", 6);
}

static void golden_decode(void **state)
{
    (void)state;
    sl_spdy_inflater in;
    const sl_spdy_nv *nv;
    size_t n;
    assert_int_equal(sl_spdy_inflater_init(&in, 65536), SL_OK);
    assert_int_equal(sl_spdy_nv_decode(&in, c2s_block1, sizeof(c2s_block1), 64, &nv, &n), SL_OK);
    assert_int_equal(n, 1);
    assert_int_equal(nv[0].name_len, 10);
    assert_string_equal(nv[0].name, "streamtype");
    assert_string_equal(nv[0].value, "error");
    assert_int_equal(nv[0].value_len, 5);
    assert_int_equal(sl_spdy_nv_decode(&in, c2s_block2, sizeof(c2s_block2), 64, &nv, &n), SL_OK);
    assert_int_equal(n, 1);
    assert_string_equal(nv[0].name, "streamtype");
    assert_string_equal(nv[0].value, "stdout");
    sl_spdy_inflater_fini(&in);

    assert_int_equal(sl_spdy_inflater_init(&in, 65536), SL_OK);
    assert_int_equal(sl_spdy_nv_decode(&in, s2c_block1, sizeof(s2c_block1), 64, &nv, &n), SL_OK);
    assert_int_equal(n, 0);
    assert_int_equal(sl_spdy_nv_decode(&in, s2c_block2, sizeof(s2c_block2), 64, &nv, &n), SL_OK);
    assert_int_equal(n, 0);
    sl_spdy_inflater_fini(&in);
}

static void golden_encode_first_blocks(void **state)
{
    (void)state;
    sl_spdy_deflater d;
    const uint8_t *b;
    size_t blen;
    /* Server direction: the first empty header block is spdystream's after
     * the zlib header. */
    assert_int_equal(sl_spdy_deflater_init(&d), SL_OK);
    assert_int_equal(sl_spdy_nv_compress(&d, NULL, 0, &b, &blen), SL_OK);
    assert_int_equal(blen, sizeof(s2c_block1));
    uint8_t s2c_ours[sizeof(s2c_block1)];
    our_zlib_header(s2c_ours, s2c_block1, sizeof(s2c_block1), 0);
    assert_memory_equal(b, s2c_ours, blen);
    sl_spdy_deflater_fini(&d);

    /* Client direction: Go's deflater chooses different matches than any
     * zlib setting for this block, so check the zlib header, the sync-flush
     * tail and the decoded meaning rather than every byte. */
    assert_int_equal(sl_spdy_deflater_init(&d), SL_OK);
    const sl_spdy_nv h[] = {NV("StreamType", "error")};
    assert_int_equal(sl_spdy_nv_compress(&d, h, 1, &b, &blen), SL_OK);
    uint8_t c2s_ours[6];
    our_zlib_header(c2s_ours, c2s_block1, 6, 0);
    assert_memory_equal(b, c2s_ours, 6); /* zlib header + dictionary id */
    assert_memory_equal(b + blen - 4, "\0\0\xff\xff", 4);
    sl_spdy_inflater in;
    const sl_spdy_nv *nv;
    size_t n;
    assert_int_equal(sl_spdy_inflater_init(&in, 65536), SL_OK);
    uint8_t *raw;
    size_t raw_len;
    assert_int_equal(sl_spdy_inflate_block(&in, b, blen, &raw, &raw_len), SL_OK);
    static const uint8_t want[] = "\0\0\0\1\0\0\0\x0astreamtype\0\0\0\5error";
    assert_int_equal(raw_len, sizeof(want) - 1);
    assert_memory_equal(raw, want, raw_len); /* lowercase on the wire */
    const sl_spdy_nv h2[] = {NV("streamtype", "stdout")};
    assert_int_equal(sl_spdy_nv_compress(&d, h2, 1, &b, &blen), SL_OK);
    assert_int_equal(sl_spdy_nv_decode(&in, b, blen, 64, &nv, &n), SL_OK);
    assert_int_equal(n, 1);
    assert_string_equal(nv[0].value, "stdout");
    sl_spdy_inflater_fini(&in);
    sl_spdy_deflater_fini(&d);
}

static void round_trip_many(void **state)
{
    (void)state;
    sl_spdy_deflater d;
    sl_spdy_inflater in;
    assert_int_equal(sl_spdy_deflater_init(&d), SL_OK);
    assert_int_equal(sl_spdy_inflater_init(&in, 65536), SL_OK);
    char *big = malloc(30000);
    assert_non_null(big);
    for (size_t i = 0; i < 30000; i++)
        big[i] = (char)('a' + (i * 7919) % 26);
    for (int round = 0; round < 50; round++) {
        char req[16];
        int rl = snprintf(req, sizeof(req), "%d", round);
        sl_spdy_nv h[4] = {NV("streamType", "data"),
                           NV("Port", "8080"),
                           {"requestID", 9, req, (size_t)rl},
                           {"x-multi", 7, "a\0b", 3}};
        size_t hn = 4;
        if (round % 10 == 9) {
            h[3].value = big;
            h[3].value_len = 30000;
        }
        const uint8_t *b;
        size_t blen;
        const sl_spdy_nv *nv;
        size_t n;
        assert_int_equal(sl_spdy_nv_compress(&d, h, hn, &b, &blen), SL_OK);
        assert_int_equal(sl_spdy_nv_decode(&in, b, blen, 64, &nv, &n), SL_OK);
        assert_int_equal(n, hn);
        assert_string_equal(nv[0].name, "streamtype");
        assert_string_equal(nv[1].name, "port");
        assert_string_equal(nv[2].name, "requestid");
        assert_string_equal(nv[2].value, req);
        assert_int_equal(nv[3].value_len, h[3].value_len);
        assert_memory_equal(nv[3].value, h[3].value, h[3].value_len);
        assert_ptr_equal(sl_spdy_nv_find(nv, n, "RequestId"), &nv[2]);
        assert_null(sl_spdy_nv_find(nv, n, "nope"));
    }
    free(big);
    sl_spdy_inflater_fini(&in);
    sl_spdy_deflater_fini(&d);
}

static void encode_errors_keep_context(void **state)
{
    (void)state;
    sl_spdy_deflater d;
    sl_spdy_inflater in;
    const uint8_t *b;
    size_t blen;
    assert_int_equal(sl_spdy_deflater_init(&d), SL_OK);
    assert_int_equal(sl_spdy_inflater_init(&in, 65536), SL_OK);
    const sl_spdy_nv dup[] = {NV("Port", "1"), NV("port", "2")};
    assert_int_equal(sl_spdy_nv_compress(&d, dup, 2, &b, &blen), SL_ERR_INVAL);
    const sl_spdy_nv empty[] = {NV("", "1")};
    assert_int_equal(sl_spdy_nv_compress(&d, empty, 1, &b, &blen), SL_ERR_INVAL);
    const sl_spdy_nv nul[] = {{"a\0b", 3, "v", 1}};
    assert_int_equal(sl_spdy_nv_compress(&d, nul, 1, &b, &blen), SL_ERR_INVAL);
    char *huge = calloc(1, SL_SPDY_MAX_SEND_BLOCK);
    assert_non_null(huge);
    const sl_spdy_nv big[] = {{"x", 1, huge, SL_SPDY_MAX_SEND_BLOCK}};
    assert_int_equal(sl_spdy_nv_compress(&d, big, 1, &b, &blen), SL_ERR_TOO_LARGE);
    free(huge);
    /* nothing above reached zlib: the first real block still decodes */
    const sl_spdy_nv ok[] = {NV("a", "b")};
    const sl_spdy_nv *nv;
    size_t n;
    assert_int_equal(sl_spdy_nv_compress(&d, ok, 1, &b, &blen), SL_OK);
    assert_int_equal(sl_spdy_nv_decode(&in, b, blen, 64, &nv, &n), SL_OK);
    assert_int_equal(n, 1);
    assert_string_equal(nv[0].value, "b");
    sl_spdy_inflater_fini(&in);
    sl_spdy_deflater_fini(&d);
}

static void parse_expect(const uint8_t *bytes, size_t len, size_t max_pairs, int want)
{
    uint8_t *raw = malloc(len + 1); /* exactly raw_len + 1, as the contract says */
    assert_non_null(raw);
    memcpy(raw, bytes, len);
    sl_spdy_nv pairs[4];
    size_t n = 99;
    int rc = sl_spdy_nv_parse(raw, len, pairs, max_pairs, &n);
    free(raw);
    assert_int_equal(rc, want);
    if (rc != SL_OK)
        assert_int_equal(n, 0);
}

#define PARSE(lit, maxp, want) parse_expect((const uint8_t *)(lit), sizeof(lit) - 1, maxp, want)

static void parse_cases(void **state)
{
    (void)state;
    PARSE("\0\0\0\0", 4, SL_OK);
    PARSE("\0\0\0\1\0\0\0\1a\0\0\0\0", 4, SL_OK);                   /* empty value is fine */
    PARSE("\0\0\0\2\0\0\0\1a\0\0\0\1x\0\0\0\1B\0\0\0\0", 4, SL_OK); /* mixed case accepted */
    PARSE("", 4, SL_ERR_PROTO);
    PARSE("\0\0\0", 4, SL_ERR_PROTO);
    PARSE("\0\0\0\0\0", 4, SL_ERR_PROTO);                                 /* trailing byte */
    PARSE("\0\0\0\1\0\0", 4, SL_ERR_PROTO);                               /* truncated length */
    PARSE("\0\0\0\1\0\0\0\5ab", 4, SL_ERR_PROTO);                         /* name past the end */
    PARSE("\0\0\0\1\0\0\0\1a\0\0\0\2x", 4, SL_ERR_PROTO);                 /* value past the end */
    PARSE("\0\0\0\1\xff\xff\xff\xff", 4, SL_ERR_PROTO);                   /* huge length */
    PARSE("\0\0\0\1\0\0\0\0\0\0\0\0", 4, SL_ERR_PROTO);                   /* empty name */
    PARSE("\0\0\0\1\0\0\0\2a\0\0\0\0\0", 4, SL_ERR_PROTO);                /* NUL in name */
    PARSE("\0\0\0\2\0\0\0\1a\0\0\0\0\0\0\0\1A\0\0\0\0", 4, SL_ERR_PROTO); /* duplicate */
    PARSE("\0\0\0\5", 4, SL_ERR_PROTO); /* count past the end: truncated, not too many */
    PARSE("\0\0\0\1\0\0\0\1a\0\0\0\0", 0, SL_ERR_TOO_LARGE);
    PARSE("\0\0\0\2\0\0\0\1a\0\0\0\0\0\0\0\1b\0\0\0\0", 1, SL_ERR_TOO_LARGE);
    PARSE("\0\0\0\2\0\0\0\1a\0\0\0\0\0\0\0\1b\0\0\0", 1, SL_ERR_PROTO);

    /* NUL-termination in place, multi-values kept whole */
    uint8_t raw[] = "\0\0\0\2\0\0\0\1a\0\0\0\3x\0y\0\0\0\2bc\0\0\0\1z";
    sl_spdy_nv p[2];
    size_t n;
    assert_int_equal(sl_spdy_nv_parse(raw, sizeof(raw) - 1, p, 2, &n), SL_OK);
    assert_int_equal(n, 2);
    assert_string_equal(p[0].name, "a");
    assert_int_equal(p[0].value_len, 3);
    assert_memory_equal(p[0].value, "x\0y", 4);
    assert_string_equal(p[1].name, "bc");
    assert_string_equal(p[1].value, "z");
}

/* Compresses raw bytes the way a peer would (dictionary, sync flush);
 * `finish` ends the zlib stream instead. Returns a malloc'd block. */
static uint8_t *peer_compress(const uint8_t *raw, size_t len, const uint8_t *dict, size_t dlen,
                              bool finish, size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    if (dict)
        assert_int_equal(deflateSetDictionary(&z, dict, (uInt)dlen), Z_OK);
    size_t cap = deflateBound(&z, len) + 64;
    uint8_t *out = malloc(cap);
    assert_non_null(out);
    z.next_in = (Bytef *)raw;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, finish ? Z_FINISH : Z_SYNC_FLUSH);
    assert_true(rc == Z_OK || rc == Z_STREAM_END);
    assert_int_equal(z.avail_in, 0);
    *out_len = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

/* A block with one header whose value is vlen bytes of 'a'. */
static uint8_t *raw_one(size_t vlen, size_t *len)
{
    *len = 4 + 4 + 1 + 4 + vlen;
    uint8_t *r = malloc(*len);
    assert_non_null(r);
    memcpy(r, "\0\0\0\1\0\0\0\1v", 9);
    r[9] = (uint8_t)(vlen >> 24);
    r[10] = (uint8_t)(vlen >> 16);
    r[11] = (uint8_t)(vlen >> 8);
    r[12] = (uint8_t)vlen;
    memset(r + 13, 'a', vlen);
    return r;
}

static void bomb_refused(void **state)
{
    (void)state;
    const size_t max_out = 65536;
    sl_spdy_inflater in;
    const sl_spdy_nv *nv;
    size_t n, rlen, blen;

    /* exactly at the limit: accepted */
    uint8_t *raw = raw_one(max_out - 13, &rlen);
    uint8_t *blk = peer_compress(raw, rlen, sl_spdy_dict, SL_SPDY_DICT_LEN, false, &blen);
    assert_int_equal(sl_spdy_inflater_init(&in, max_out), SL_OK);
    assert_int_equal(sl_spdy_nv_decode(&in, blk, blen, 64, &nv, &n), SL_OK);
    assert_int_equal(nv[0].value_len, max_out - 13);
    sl_spdy_inflater_fini(&in);
    free(raw);
    free(blk);

    /* one byte over: refused, context broken */
    raw = raw_one(max_out - 12, &rlen);
    blk = peer_compress(raw, rlen, sl_spdy_dict, SL_SPDY_DICT_LEN, false, &blen);
    assert_int_equal(sl_spdy_inflater_init(&in, max_out), SL_OK);
    assert_int_equal(sl_spdy_nv_decode(&in, blk, blen, 64, &nv, &n), SL_ERR_TOO_LARGE);
    assert_true(sl_spdy_inflater_broken(&in));
    assert_true(in.cap <= max_out + 1);
    sl_spdy_inflater_fini(&in);
    free(raw);
    free(blk);

    /* 16 MiB of 'a' compresses to ~16 KiB; inflating stops at the limit */
    raw = raw_one(16u << 20, &rlen);
    blk = peer_compress(raw, rlen, sl_spdy_dict, SL_SPDY_DICT_LEN, false, &blen);
    assert_true(blen < 64 * 1024);
    assert_int_equal(sl_spdy_inflater_init(&in, max_out), SL_OK);
    assert_int_equal(sl_spdy_nv_decode(&in, blk, blen, 64, &nv, &n), SL_ERR_TOO_LARGE);
    assert_true(in.cap <= max_out + 1);
    assert_int_equal(sl_spdy_nv_decode(&in, s2c_block2, sizeof(s2c_block2), 64, &nv, &n),
                     SL_ERR_COMPRESSION);
    sl_spdy_inflater_fini(&in);
    free(raw);
    free(blk);
}

static void corrupt_blocks(void **state)
{
    (void)state;
    sl_spdy_inflater in;
    const sl_spdy_nv *nv;
    size_t n, blen, rlen;

    /* garbage */
    const uint8_t junk[] = {0x78, 0xf9, 0xe3, 0xc6, 0xa7, 0xc2, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(sl_spdy_inflater_init(&in, 65536), SL_OK);
    assert_int_equal(sl_spdy_nv_decode(&in, junk, sizeof(junk), 64, &nv, &n), SL_ERR_COMPRESSION);
    assert_true(sl_spdy_inflater_broken(&in));
    sl_spdy_inflater_fini(&in);

    /* another dictionary */
    uint8_t *raw = raw_one(3, &rlen);
    const uint8_t other[] = "not the spdy dictionary";
    uint8_t *blk = peer_compress(raw, rlen, other, sizeof(other), false, &blen);
    assert_int_equal(sl_spdy_inflater_init(&in, 65536), SL_OK);
    assert_int_equal(sl_spdy_nv_decode(&in, blk, blen, 64, &nv, &n), SL_ERR_COMPRESSION);
    sl_spdy_inflater_fini(&in);
    free(blk);

    /* a peer that ends the shared stream */
    blk = peer_compress(raw, rlen, sl_spdy_dict, SL_SPDY_DICT_LEN, true, &blen);
    assert_int_equal(sl_spdy_inflater_init(&in, 65536), SL_OK);
    assert_int_equal(sl_spdy_nv_decode(&in, blk, blen, 64, &nv, &n), SL_ERR_COMPRESSION);
    sl_spdy_inflater_fini(&in);
    free(blk);
    free(raw);

    /* a block cut short does not end on a sync flush: the context is lost */
    assert_int_equal(sl_spdy_inflater_init(&in, 65536), SL_OK);
    assert_int_equal(sl_spdy_nv_decode(&in, c2s_block1, 10, 64, &nv, &n), SL_ERR_COMPRESSION);
    assert_true(sl_spdy_inflater_broken(&in));
    assert_int_equal(sl_spdy_nv_decode(&in, c2s_block2, sizeof(c2s_block2), 64, &nv, &n),
                     SL_ERR_COMPRESSION);
    sl_spdy_inflater_fini(&in);

    /* an empty block is no block */
    assert_int_equal(sl_spdy_inflater_init(&in, 65536), SL_OK);
    assert_int_equal(sl_spdy_nv_decode(&in, c2s_block1, 0, 64, &nv, &n), SL_ERR_COMPRESSION);
    assert_true(sl_spdy_inflater_broken(&in));
    sl_spdy_inflater_fini(&in);
}

static void pair_limit_keeps_context(void **state)
{
    (void)state;
    sl_spdy_deflater d;
    sl_spdy_inflater in;
    const uint8_t *b;
    size_t blen, n;
    const sl_spdy_nv *nv;
    assert_int_equal(sl_spdy_deflater_init(&d), SL_OK);
    assert_int_equal(sl_spdy_inflater_init(&in, 65536), SL_OK);
    sl_spdy_nv h[65];
    char names[65][8];
    for (int i = 0; i < 65; i++) {
        snprintf(names[i], sizeof(names[i]), "h%d", i);
        h[i] = (sl_spdy_nv){names[i], strlen(names[i]), "v", 1};
    }
    assert_int_equal(sl_spdy_nv_compress(&d, h, 65, &b, &blen), SL_OK);
    assert_int_equal(sl_spdy_nv_decode(&in, b, blen, 64, &nv, &n), SL_ERR_TOO_LARGE);
    assert_false(sl_spdy_inflater_broken(&in));
    assert_int_equal(sl_spdy_nv_compress(&d, h, 64, &b, &blen), SL_OK);
    assert_int_equal(sl_spdy_nv_decode(&in, b, blen, 64, &nv, &n), SL_OK);
    assert_int_equal(n, 64);
    assert_string_equal(nv[63].name, "h63");
    sl_spdy_inflater_fini(&in);
    /* a count claiming more pairs (within the limit) than bytes present:
     * a truncated NV block, fatal (see sl_spdy_nv_decode) */
    size_t clen;
    uint8_t *blk = peer_compress((const uint8_t *)"\0\0\0\x30", 4, sl_spdy_dict, SL_SPDY_DICT_LEN,
                                 false, &clen);
    assert_int_equal(sl_spdy_inflater_init(&in, 65536), SL_OK);
    assert_int_equal(sl_spdy_nv_decode(&in, blk, clen, 64, &nv, &n), SL_ERR_PROTO);
    assert_true(sl_spdy_inflater_broken(&in));
    free(blk);
    sl_spdy_inflater_fini(&in);
    sl_spdy_deflater_fini(&d);
}

/* ---- blocks must end on a sync flush ------------------------------------------ */

/* A peer's compression context, fed block by block with a chosen flush. */
typedef struct peer_z {
    z_stream z;
} peer_z;

static void pz_init(peer_z *p)
{
    memset(p, 0, sizeof(*p));
    assert_int_equal(deflateInit2(&p->z, 9, Z_DEFLATED, 15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    assert_int_equal(deflateSetDictionary(&p->z, sl_spdy_dict, SL_SPDY_DICT_LEN), Z_OK);
}

static size_t pz_block(peer_z *p, const uint8_t *raw, size_t n, int flush, uint8_t *out, size_t cap)
{
    p->z.next_in = (Bytef *)raw;
    p->z.avail_in = (uInt)n;
    p->z.next_out = out;
    p->z.avail_out = (uInt)cap;
    int rc = deflate(&p->z, flush);
    assert_true(rc == Z_OK || rc == Z_BUF_ERROR);
    assert_int_equal(p->z.avail_in, 0);
    assert_true(p->z.avail_out > 0);
    return cap - p->z.avail_out;
}

/* Raw NV block of pairs name, value, ... (lengths < 65536). */
static size_t raw_nv(uint8_t *buf, const char *const *kv, size_t pairs)
{
    size_t off = 4;
    memcpy(buf, "\0\0\0", 3);
    buf[3] = (uint8_t)pairs;
    for (size_t i = 0; i < 2 * pairs; i++) {
        size_t l = strlen(kv[i]);
        buf[off] = buf[off + 1] = 0;
        buf[off + 2] = (uint8_t)(l >> 8);
        buf[off + 3] = (uint8_t)l;
        memcpy(buf + off + 4, kv[i], l);
        off += 4 + l;
    }
    return off;
}

/* Decodes `first` (if any), then every proper prefix of blk, each through a
 * fresh context from an exact-size copy: all are refused and break it. */
static void every_cut_refused(const uint8_t *first, size_t first_len, const uint8_t *blk,
                              size_t len)
{
    for (size_t cut = 0; cut < len; cut++) {
        sl_spdy_inflater in;
        const sl_spdy_nv *nv;
        size_t n;
        assert_int_equal(sl_spdy_inflater_init(&in, 65536), SL_OK);
        if (first)
            assert_int_equal(sl_spdy_nv_decode(&in, first, first_len, 64, &nv, &n), SL_OK);
        uint8_t *copy = malloc(cut ? cut : 1);
        assert_non_null(copy);
        memcpy(copy, blk, cut);
        int rc = sl_spdy_nv_decode(&in, copy, cut, 64, &nv, &n);
        free(copy);
        if (rc != SL_ERR_COMPRESSION || !sl_spdy_inflater_broken(&in))
            fail_msg("cut at %zu of %zu: rc %d", cut, len, rc);
        sl_spdy_inflater_fini(&in);
    }
}

/* Between blocks both contexts are parked (no zlib state, only the
 * history), and each side still reads the other: our blocks through a
 * peer's live inflater, a peer's live deflater's blocks through ours, with
 * repeated values so that blocks refer back into the kept history. */
static void parked_between_blocks(void **state)
{
    (void)state;
    sl_spdy_deflater d;
    sl_spdy_inflater in;
    assert_int_equal(sl_spdy_deflater_init(&d), SL_OK);
    assert_int_equal(sl_spdy_inflater_init(&in, 65536), SL_OK);
    z_stream pin;
    memset(&pin, 0, sizeof(pin));
    assert_int_equal(inflateInit(&pin), Z_OK);
    peer_z pd;
    pz_init(&pd);
    for (int round = 0; round < 20; round++) {
        char v[32];
        int vl = snprintf(v, sizeof(v), "value-%d-%s", round % 3, round % 2 ? "odd" : "even");
        const sl_spdy_nv h[2] = {NV("streamType", "stdout"), {"x-round", 7, v, (size_t)vl}};
        const uint8_t *b;
        size_t blen;
        assert_int_equal(sl_spdy_nv_compress(&d, h, 2, &b, &blen), SL_OK);
        assert_true(d.parked);
        assert_false(d.ready);
        uint8_t raw[512], want[512];
        pin.next_in = (Bytef *)b;
        pin.avail_in = (uInt)blen;
        pin.next_out = raw;
        pin.avail_out = sizeof(raw);
        int rc = inflate(&pin, Z_SYNC_FLUSH);
        if (rc == Z_NEED_DICT) {
            assert_int_equal(inflateSetDictionary(&pin, sl_spdy_dict, SL_SPDY_DICT_LEN), Z_OK);
            rc = inflate(&pin, Z_SYNC_FLUSH);
        }
        assert_int_equal(rc, Z_OK);
        assert_int_equal(pin.avail_in, 0);
        const char *kv[] = {"streamtype", "stdout", "x-round", v};
        size_t wl = raw_nv(want, kv, 2);
        assert_int_equal(sizeof(raw) - pin.avail_out, wl);
        assert_memory_equal(raw, want, wl);
        uint8_t blk[512];
        size_t bl = pz_block(&pd, want, wl, Z_SYNC_FLUSH, blk, sizeof(blk));
        const sl_spdy_nv *nv;
        size_t n;
        assert_int_equal(sl_spdy_nv_decode(&in, blk, bl, 64, &nv, &n), SL_OK);
        assert_true(in.parked);
        assert_false(in.ready);
        assert_int_equal(n, 2);
        assert_string_equal(nv[1].value, v);
    }
    inflateEnd(&pin);
    deflateEnd(&pd.z);
    sl_spdy_inflater_fini(&in);
    sl_spdy_deflater_fini(&d);
}

static void golden_every_truncation(void **state)
{
    (void)state;
    every_cut_refused(NULL, 0, c2s_block1, sizeof(c2s_block1));
    every_cut_refused(c2s_block1, sizeof(c2s_block1), c2s_block2, sizeof(c2s_block2));
    every_cut_refused(NULL, 0, s2c_block1, sizeof(s2c_block1));
    every_cut_refused(s2c_block1, sizeof(s2c_block1), s2c_block2, sizeof(s2c_block2));
}

/* The interop case: {streamtype: error, x-pad: 3000 x 'a'} cut anywhere
 * after a first block; the well-formed block after it must not decode. */
static void big_block_every_truncation(void **state)
{
    (void)state;
    static uint8_t raw[4096], a[256], b[4096], c[256];
    char pad[3001];
    memset(pad, 'a', 3000);
    pad[3000] = 0;
    const char *h1[] = {"streamtype", "bogus"}, *h2[] = {"streamtype", "error", "x-pad", pad},
               *h3[] = {"streamtype", "stdout"};
    peer_z p;
    pz_init(&p);
    size_t al = pz_block(&p, raw, raw_nv(raw, h1, 1), Z_SYNC_FLUSH, a, sizeof(a));
    size_t bl = pz_block(&p, raw, raw_nv(raw, h2, 2), Z_SYNC_FLUSH, b, sizeof(b));
    size_t cl = pz_block(&p, raw, raw_nv(raw, h3, 1), Z_SYNC_FLUSH, c, sizeof(c));
    deflateEnd(&p.z);
    every_cut_refused(a, al, b, bl);
    for (size_t cut = 0; cut < bl; cut++) { /* and the next block stays refused */
        sl_spdy_inflater in;
        const sl_spdy_nv *nv;
        size_t n;
        assert_int_equal(sl_spdy_inflater_init(&in, 65536), SL_OK);
        assert_int_equal(sl_spdy_nv_decode(&in, a, al, 64, &nv, &n), SL_OK);
        assert_int_not_equal(sl_spdy_nv_decode(&in, b, cut, 64, &nv, &n), SL_OK);
        assert_int_equal(sl_spdy_nv_decode(&in, c, cl, 64, &nv, &n), SL_ERR_COMPRESSION);
        sl_spdy_inflater_fini(&in);
    }
    /* whole, all three decode */
    sl_spdy_inflater in;
    const sl_spdy_nv *nv;
    size_t n;
    assert_int_equal(sl_spdy_inflater_init(&in, 65536), SL_OK);
    assert_int_equal(sl_spdy_nv_decode(&in, a, al, 64, &nv, &n), SL_OK);
    assert_int_equal(sl_spdy_nv_decode(&in, b, bl, 64, &nv, &n), SL_OK);
    assert_int_equal(n, 2);
    assert_int_equal(nv[1].value_len, 3000);
    assert_int_equal(sl_spdy_nv_decode(&in, c, cl, 64, &nv, &n), SL_OK);
    assert_string_equal(nv[0].value, "stdout");
    sl_spdy_inflater_fini(&in);
}

/* Decodes blocks [0, nb) in one context, expecting rc[i] and broken[i]. */
static void decode_seq(const uint8_t *const *blk, const size_t *len, size_t nb, const int *rc,
                       const bool *broken)
{
    sl_spdy_inflater in;
    const sl_spdy_nv *nv;
    size_t n;
    assert_int_equal(sl_spdy_inflater_init(&in, 65536), SL_OK);
    for (size_t i = 0; i < nb; i++) {
        uint8_t *copy = malloc(len[i] ? len[i] : 1);
        assert_non_null(copy);
        memcpy(copy, blk[i], len[i]);
        int got = sl_spdy_nv_decode(&in, copy, len[i], 64, &nv, &n);
        free(copy);
        if (got != rc[i] || sl_spdy_inflater_broken(&in) != broken[i])
            fail_msg("block %zu: rc %d, broken %d", i, got, sl_spdy_inflater_broken(&in));
    }
    sl_spdy_inflater_fini(&in);
}

static void flush_variants(void **state)
{
    (void)state;
    static uint8_t raw[256], b1[256], b2[256], b3[256], two[512];
    const char *h1[] = {"streamtype", "data"}, *h2[] = {"port", "80"}, *h3[] = {"a", "b"};
    peer_z p;
    /* Z_FULL_FLUSH also ends with 00 00 ff ff on a block boundary */
    pz_init(&p);
    size_t l1 = pz_block(&p, raw, raw_nv(raw, h1, 1), Z_FULL_FLUSH, b1, sizeof(b1));
    size_t l2 = pz_block(&p, raw, raw_nv(raw, h2, 1), Z_SYNC_FLUSH, b2, sizeof(b2));
    deflateEnd(&p.z);
    const uint8_t *full[] = {b1, b2};
    const size_t full_len[] = {l1, l2};
    decode_seq(full, full_len, 2, (const int[]){SL_OK, SL_OK}, (const bool[]){false, false});

    /* Z_PARTIAL_FLUSH ends with an empty fixed block, not a sync flush */
    pz_init(&p);
    l1 = pz_block(&p, raw, raw_nv(raw, h1, 1), Z_PARTIAL_FLUSH, b1, sizeof(b1));
    deflateEnd(&p.z);
    decode_seq(full, &l1, 1, (const int[]){SL_ERR_COMPRESSION}, (const bool[]){true});

    /* two whole blocks in one frame: in step, but trailing NV bytes */
    pz_init(&p);
    l1 = pz_block(&p, raw, raw_nv(raw, h1, 1), Z_SYNC_FLUSH, b1, sizeof(b1));
    l2 = pz_block(&p, raw, raw_nv(raw, h2, 1), Z_SYNC_FLUSH, b2, sizeof(b2));
    size_t l3 = pz_block(&p, raw, raw_nv(raw, h3, 1), Z_SYNC_FLUSH, b3, sizeof(b3));
    deflateEnd(&p.z);
    memcpy(two, b1, l1);
    memcpy(two + l1, b2, l2);
    const uint8_t *seq[] = {two, b3};
    size_t seq_len[] = {l1 + l2, l3};
    decode_seq(seq, seq_len, 2, (const int[]){SL_ERR_PROTO, SL_OK}, (const bool[]){false, false});

    /* a repeated flush (one more empty stored block) keeps the context */
    memcpy(two, b1, l1);
    memcpy(two + l1, "\0\0\0\xff\xff", 5);
    const uint8_t *rep[] = {two, b2};
    size_t rep_len[] = {l1 + 5, l2};
    decode_seq(rep, rep_len, 2, (const int[]){SL_OK, SL_OK}, (const bool[]){false, false});

    /* a block and the start of the next: not on a boundary */
    for (size_t extra = 1; extra < l2; extra++) {
        memcpy(two, b1, l1);
        memcpy(two + l1, b2, extra);
        size_t ext_len = l1 + extra;
        decode_seq(seq, &ext_len, 1, (const int[]){SL_ERR_COMPRESSION}, (const bool[]){true});
    }
}

/* A sender that flushes inside one NV block (no SPDY sender does); the
 * frame is cut right after that inner flush. The zlib check cannot see the
 * cut, the NV parse can: it needs more bytes, so the session must end. */
static void nv_cut_at_inner_flush(void **state)
{
    (void)state;
    static uint8_t raw[256], part1[256], part2[256], whole[512], next[256];
    const char *h[] = {"streamtype", "stdout", "port", "8080"}, *h2[] = {"a", "b"};
    size_t rl = raw_nv(raw, h, 2);
    peer_z p;
    pz_init(&p);
    size_t l1 = pz_block(&p, raw, rl / 2, Z_SYNC_FLUSH, part1, sizeof(part1));
    size_t l2 = pz_block(&p, raw + rl / 2, rl - rl / 2, Z_SYNC_FLUSH, part2, sizeof(part2));
    size_t ln = pz_block(&p, raw, raw_nv(raw, h2, 1), Z_SYNC_FLUSH, next, sizeof(next));
    deflateEnd(&p.z);
    const uint8_t *cut[] = {part1};
    decode_seq(cut, &l1, 1, (const int[]){SL_ERR_PROTO}, (const bool[]){true});
    /* both parts in one frame: a whole block, and the next one follows */
    memcpy(whole, part1, l1);
    memcpy(whole + l1, part2, l2);
    const uint8_t *ok[] = {whole, next};
    size_t ok_len[] = {l1 + l2, ln};
    decode_seq(ok, ok_len, 2, (const int[]){SL_OK, SL_OK}, (const bool[]){false, false});
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dictionary),
        cmocka_unit_test(golden_decode),
        cmocka_unit_test(golden_encode_first_blocks),
        cmocka_unit_test(round_trip_many),
        cmocka_unit_test(encode_errors_keep_context),
        cmocka_unit_test(parse_cases),
        cmocka_unit_test(bomb_refused),
        cmocka_unit_test(corrupt_blocks),
        cmocka_unit_test(pair_limit_keeps_context),
        cmocka_unit_test(golden_every_truncation),
        cmocka_unit_test(big_block_every_truncation),
        cmocka_unit_test(flush_variants),
        cmocka_unit_test(nv_cut_at_inner_flush),
        cmocka_unit_test(parked_between_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
