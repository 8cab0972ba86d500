/* spdystream's golden header blocks start with Go's zlib header (78 f9: a
 * 32 KiB window). Ours declares the smaller window we deflate with
 * (SL_SPDY_ZLIB_WINDOW_BITS); the bytes after those two are spdystream's.
 * Copies `n` bytes of `golden` to `out` with the two header bytes at
 * `zoff` rewritten to ours. */
#ifndef TEST_SPDY_GOLDEN_H
#define TEST_SPDY_GOLDEN_H

#include <stdint.h>
#include <string.h>

#include "spdy/spdy_zlib.h"

static inline void our_zlib_header(uint8_t *out, const uint8_t *golden, size_t n, size_t zoff)
{
    memcpy(out, golden, n);
    unsigned cmf = (unsigned)(SL_SPDY_ZLIB_WINDOW_BITS - 8) << 4 | 8; /* deflate */
    unsigned flg = 0xC0 | 0x20;                                       /* level 9, dictionary */
    flg += (31 - (cmf * 256 + flg) % 31) % 31;                        /* FCHECK */
    out[zoff] = (uint8_t)cmf;
    out[zoff + 1] = (uint8_t)flg;
}

#endif
