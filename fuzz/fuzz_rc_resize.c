/* The resize stream decoder against the property every transport relies on:
 * how the bytes are split across messages never changes what comes out.
 * The input is decoded whole, then again in pieces whose lengths come from
 * the input itself; both must give the same sizes and the same verdict. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "remotecommand/rc_resize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_SIZES 4096

typedef struct seen {
    sl_term_size v[MAX_SIZES];
    size_t n;
} seen;

static void on_size(void *arg, sl_term_size s)
{
    seen *o = arg;
    if (o->n < MAX_SIZES)
        o->v[o->n] = s;
    o->n++;
}

/* Feeds data in pieces of 1..16 bytes, the piece lengths taken from the
 * data bytes themselves; each piece is an exact heap copy. */
static int feed_split(const uint8_t *data, size_t size, seen *o)
{
    sl_rc_resize r;
    sl_rc_resize_init(&r);
    int rc = 0;
    for (size_t at = 0; at < size;) {
        size_t n = (size_t)(data[at] % 16) + 1;
        if (n > size - at)
            n = size - at;
        uint8_t *piece = malloc(n);
        if (!piece)
            abort();
        memcpy(piece, data + at, n);
        rc = sl_rc_resize_feed(&r, piece, n, on_size, o);
        free(piece);
        at += n;
    }
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static seen whole, split;
    whole.n = split.n = 0;
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    sl_rc_resize r;
    sl_rc_resize_init(&r);
    int rc_whole = sl_rc_resize_feed(&r, copy, size, on_size, &whole);
    free(copy);
    int rc_split = feed_split(data, size, &split);
    /* A malformed object stops decoding for good, wherever it was cut. */
    if ((rc_whole < 0) != (rc_split < 0) || whole.n != split.n)
        __builtin_trap();
    size_t n = whole.n < MAX_SIZES ? whole.n : MAX_SIZES;
    if (memcmp(whole.v, split.v, n * sizeof(sl_term_size)) != 0)
        __builtin_trap();
    return 0;
}
