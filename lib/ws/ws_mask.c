#include "ws/ws_mask.h"

#include <string.h>

/* The 4-byte key repeats every 4 bytes, so an 8-byte word of it rotated by
 * phase masks every 8-byte step alike. memcpy keeps loads and stores legal
 * at any alignment; compilers turn them into plain (or vector) moves. */
void sl_ws_unmask(uint8_t *dst, const uint8_t *src, size_t n, const uint8_t key[4], uint64_t phase)
{
    uint8_t kb[8];
    for (size_t j = 0; j < 8; j++)
        kb[j] = key[(phase + j) & 3];
    uint64_t kw;
    memcpy(&kw, kb, 8);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, src + i, 8);
        w ^= kw;
        memcpy(dst + i, &w, 8);
    }
    for (; i < n; i++)
        dst[i] = src[i] ^ kb[i & 7];
}
