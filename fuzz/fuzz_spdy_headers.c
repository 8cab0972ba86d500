/* Header-block decoder: the input is a sequence of blocks, each a 2-byte
 * big-endian length then that many compressed bytes (the last block takes
 * what is left), all inflated through one shared context as a session
 * would. The first byte picks the limits. Every decoded block must
 * re-encode and decode to the same headers; the raw parser is also fed
 * each block's bytes directly. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sluice/error.h"
#include "spdy/spdy_zlib.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void parse_raw(const uint8_t *p, size_t n, size_t max_pairs)
{
    uint8_t *raw = malloc(n + 1); /* the contract: raw_len + 1 writable bytes */
    sl_spdy_nv *pairs = malloc(max_pairs * sizeof(*pairs));
    if (raw && pairs) {
        memcpy(raw, p, n);
        size_t cnt;
        sl_spdy_nv_parse(raw, n, pairs, max_pairs, &cnt);
    }
    free(raw);
    free(pairs);
}

static void round_trip(sl_spdy_deflater *d, sl_spdy_inflater *check, const sl_spdy_nv *nv, size_t n,
                       size_t max_pairs)
{
    const uint8_t *b;
    size_t blen;
    int rc = sl_spdy_nv_compress(d, nv, n, &b, &blen);
    if (rc == SL_ERR_NOMEM)
        return;
    if (rc != SL_OK)
        __builtin_trap(); /* whatever decodes must be valid to send */
    const sl_spdy_nv *back;
    size_t m;
    if (sl_spdy_nv_decode(check, b, blen, max_pairs, &back, &m) != SL_OK || m != n)
        __builtin_trap();
    for (size_t i = 0; i < n; i++) {
        if (back[i].name_len != nv[i].name_len || back[i].value_len != nv[i].value_len ||
            strncasecmp(back[i].name, nv[i].name, nv[i].name_len) != 0 ||
            memcmp(back[i].value, nv[i].value, nv[i].value_len) != 0)
            __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t max_out = (data[0] & 1) ? 1024 : 65536;
    size_t max_pairs = 1 + (data[0] >> 1) % 64;
    data++;
    size--;
    sl_spdy_inflater in, check;
    sl_spdy_deflater d;
    if (sl_spdy_inflater_init(&in, max_out) != SL_OK)
        return 0;
    if (sl_spdy_inflater_init(&check, 65536) != SL_OK || sl_spdy_deflater_init(&d) != SL_OK) {
        sl_spdy_inflater_fini(&in);
        sl_spdy_inflater_fini(&check);
        return 0;
    }
    size_t off = 0;
    while (off < size && !sl_spdy_inflater_broken(&in)) {
        size_t n = size - off;
        if (n >= 2) {
            size_t l = (size_t)data[off] << 8 | data[off + 1];
            off += 2;
            n = l < size - off ? l : size - off;
        }
        /* decode from an exact-size copy so over-reads are caught */
        uint8_t *blk = malloc(n ? n : 1);
        if (!blk)
            break;
        memcpy(blk, data + off, n);
        parse_raw(blk, n, max_pairs);
        const sl_spdy_nv *nv;
        size_t cnt;
        int rc = sl_spdy_nv_decode(&in, blk, n, max_pairs, &nv, &cnt);
        if (rc == SL_OK)
            round_trip(&d, &check, nv, cnt, max_pairs);
        else if (rc == SL_ERR_TOO_LARGE && sl_spdy_inflater_broken(&in) && in.cap > max_out + 1)
            __builtin_trap(); /* a bomb must be refused before it expands */
        free(blk);
        off += n;
    }
    sl_spdy_inflater_fini(&in);
    sl_spdy_inflater_fini(&check);
    sl_spdy_deflater_fini(&d);
    return 0;
}
