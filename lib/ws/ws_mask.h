/* RFC 6455 §5.3 payload (un)masking, 8 bytes a step. I/O free. */
#ifndef SL_WS_MASK_H
#define SL_WS_MASK_H

#include <stddef.h>
#include <stdint.h>

/* dst[i] = src[i] ^ key[(phase + i) % 4] for i < n: phase is the offset of
 * src[0] in its frame's payload. dst and src may be equal (in place) but
 * must not otherwise overlap; neither needs any alignment. */
void sl_ws_unmask(uint8_t *dst, const uint8_t *src, size_t n, const uint8_t key[4], uint64_t phase);

#endif
