/* Resumable Length-Prefixed-Message decoder. */
#include "grpc/grpc_frame.h"

#include <stdlib.h>
#include <string.h>

#include "sluice/error.h"

void sl_grpc_decoder_init(sl_grpc_decoder *d, uint32_t max)
{
    memset(d, 0, sizeof(*d));
    d->max = max;
    d->state = SL_GRPC_DEC_PREFIX;
}

void sl_grpc_decoder_fini(sl_grpc_decoder *d)
{
    free(d->buf);
    d->buf = NULL;
    d->cap = 0;
}

static int fail(sl_grpc_decoder *d, int err)
{
    d->state = SL_GRPC_DEC_FAILED;
    d->err = err;
    free(d->buf);
    d->buf = NULL;
    d->cap = 0;
    return err;
}

/* Checks a complete prefix and moves on to the payload. */
static int prefix_done(sl_grpc_decoder *d)
{
    uint8_t flag = d->prefix[0];
    d->len = (uint32_t)d->prefix[1] << 24 | (uint32_t)d->prefix[2] << 16 |
             (uint32_t)d->prefix[3] << 8 | d->prefix[4];
    if (flag == 1)
        return fail(d, SL_ERR_UNSUPPORTED);
    if (flag != 0)
        return fail(d, SL_ERR_PROTO);
    if (d->len > d->max)
        return fail(d, SL_ERR_TOO_LARGE);
    d->have = 0;
    d->state = d->len == 0 ? SL_GRPC_DEC_DONE : SL_GRPC_DEC_PAYLOAD;
    return d->len == 0 ? 1 : 0;
}

/* Grows the buffer geometrically, never beyond the announced length, so a
 * peer that announces 16 MiB and sends nothing costs nothing. */
static int reserve(sl_grpc_decoder *d, size_t need)
{
    if (need <= d->cap)
        return SL_OK;
    size_t cap = d->cap ? d->cap : SL_GRPC_DECODER_MIN_ALLOC;
    while (cap < need)
        cap *= 2;
    if (cap > d->len)
        cap = d->len;
    uint8_t *b = realloc(d->buf, cap);
    if (!b)
        return SL_ERR_NOMEM;
    d->buf = b;
    d->cap = cap;
    return SL_OK;
}

int sl_grpc_decoder_feed(sl_grpc_decoder *d, const uint8_t *data, size_t len, size_t *used)
{
    size_t off = 0;
    int rc = 0;
    *used = 0;
    if (d->state == SL_GRPC_DEC_FAILED)
        return d->err;
    while (off < len && rc == 0 && d->state != SL_GRPC_DEC_DONE) {
        if (d->state == SL_GRPC_DEC_PREFIX) {
            d->prefix[d->nprefix++] = data[off++];
            if (d->nprefix == SL_GRPC_PREFIX_LEN)
                rc = prefix_done(d);
            continue;
        }
        size_t n = d->len - d->have;
        if (n > len - off)
            n = len - off;
        if (reserve(d, (size_t)d->have + n) < 0) {
            *used = off;
            return fail(d, SL_ERR_NOMEM);
        }
        memcpy(d->buf + d->have, data + off, n);
        d->have += (uint32_t)n;
        off += n;
        if (d->have == d->len) {
            d->state = SL_GRPC_DEC_DONE;
            rc = 1;
        }
    }
    *used = off;
    if (rc == 0 && d->state == SL_GRPC_DEC_DONE)
        rc = 1;
    return rc;
}

int sl_grpc_decoder_take(sl_grpc_decoder *d, uint8_t **msg, size_t *len)
{
    if (d->state != SL_GRPC_DEC_DONE)
        return SL_ERR_STATE;
    *msg = d->len ? d->buf : NULL;
    *len = d->len;
    if (!d->len)
        free(d->buf);
    d->buf = NULL;
    d->cap = 0;
    d->nprefix = 0;
    d->len = d->have = 0;
    d->state = SL_GRPC_DEC_PREFIX;
    return SL_OK;
}

bool sl_grpc_decoder_idle(const sl_grpc_decoder *d)
{
    return d->state == SL_GRPC_DEC_PREFIX && d->nprefix == 0;
}

void sl_grpc_decoder_progress(const sl_grpc_decoder *d, size_t *have, size_t *want)
{
    if (d->state == SL_GRPC_DEC_PAYLOAD) {
        *have = SL_GRPC_PREFIX_LEN + (size_t)d->have;
        *want = SL_GRPC_PREFIX_LEN + (size_t)d->len;
    } else if (d->state == SL_GRPC_DEC_PREFIX && d->nprefix) {
        *have = d->nprefix;
        *want = SL_GRPC_PREFIX_LEN;
    } else {
        *have = *want = 0;
    }
}

void sl_grpc_frame_prefix(uint8_t out[SL_GRPC_PREFIX_LEN], uint32_t len)
{
    out[0] = 0;
    out[1] = (uint8_t)(len >> 24);
    out[2] = (uint8_t)(len >> 16);
    out[3] = (uint8_t)(len >> 8);
    out[4] = (uint8_t)len;
}
