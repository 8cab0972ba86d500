#include "spdy/spdy_zlib.h"

#include <stdlib.h>
#include <string.h>

#include "sluice/error.h"

#define INFLATE_FIRST_CAP 1024u /* first size of the decompression buffer */
/* zlib's data_type when inflate() stopped between two deflate blocks, with
 * no bits of the last byte left over, not in the final block. */
#define INFLATE_BETWEEN_BLOCKS 128
#define SYNC_MARKER_LEN 4 /* 00 00 ff ff: the empty stored block of a sync flush */

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static char lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static bool name_eq(const char *a, size_t alen, const char *b, size_t blen)
{
    if (alen != blen)
        return false;
    for (size_t i = 0; i < alen; i++)
        if (lower(a[i]) != lower(b[i]))
            return false;
    return true;
}

const sl_spdy_nv *sl_spdy_nv_find(const sl_spdy_nv *nv, size_t n, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < n; i++)
        if (name_eq(nv[i].name, nv[i].name_len, name, len))
            return &nv[i];
    return NULL;
}

/* Header counts are small (tens), so the quadratic check is cheap and
 * needs no allocation. */
static bool has_duplicate(const sl_spdy_nv *nv, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (name_eq(nv[i].name, nv[i].name_len, nv[j].name, nv[j].name_len))
                return true;
    return false;
}

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
    if (*cap >= need)
        return SL_OK;
    uint8_t *nb = realloc(*buf, need);
    if (!nb)
        return SL_ERR_NOMEM;
    *buf = nb;
    *cap = need;
    return SL_OK;
}

/* ---- sending --------------------------------------------------------------- */

int sl_spdy_deflater_init(sl_spdy_deflater *d)
{
    memset(d, 0, sizeof(*d));
    if (deflateInit2(&d->z, SL_SPDY_ZLIB_LEVEL, Z_DEFLATED, SL_SPDY_ZLIB_WINDOW_BITS,
                     SL_SPDY_ZLIB_MEM_LEVEL, SL_SPDY_ZLIB_STRATEGY) != Z_OK)
        return SL_ERR_NOMEM;
    d->ready = true;
    if (deflateSetDictionary(&d->z, sl_spdy_dict, SL_SPDY_DICT_LEN) != Z_OK) {
        sl_spdy_deflater_fini(d);
        return SL_ERR_NOMEM;
    }
    return SL_OK;
}

void sl_spdy_deflater_fini(sl_spdy_deflater *d)
{
    if (d->ready)
        deflateEnd(&d->z);
    free(d->raw);
    free(d->out);
    memset(d, 0, sizeof(*d));
}

/* Ends zlib's state and keeps nothing: the blocks we send may refer back
 * to earlier ones but need not, so the next block starts from an empty
 * window. The peer's inflater (its window holds ours and more) reads it
 * the same; only the later blocks compress a little less, and they are
 * few (a session's replies). Our raw buffer goes too; out holds the
 * block just made until the next call. */
static void deflater_park(sl_spdy_deflater *d)
{
    deflateEnd(&d->z);
    free(d->raw);
    d->raw = NULL;
    d->raw_cap = 0;
    d->ready = false;
    d->parked = true;
}

/* A raw context (the stream's zlib header went out with the first block)
 * with an empty window. */
static int deflater_resume(sl_spdy_deflater *d)
{
    memset(&d->z, 0, sizeof(d->z));
    if (deflateInit2(&d->z, SL_SPDY_ZLIB_LEVEL, Z_DEFLATED, -SL_SPDY_ZLIB_WINDOW_BITS,
                     SL_SPDY_ZLIB_MEM_LEVEL, SL_SPDY_ZLIB_STRATEGY) != Z_OK)
        return SL_ERR_NOMEM; /* still parked: nothing was sent */
    d->parked = false;
    d->ready = true;
    return SL_OK;
}

/* Checks the pairs and returns the uncompressed size, or a negative error. */
static long long raw_size(const sl_spdy_nv *nv, size_t n)
{
    size_t total = 4;
    for (size_t i = 0; i < n; i++) {
        if (nv[i].name_len == 0 || memchr(nv[i].name, 0, nv[i].name_len))
            return SL_ERR_INVAL;
        if (nv[i].name_len > SL_SPDY_MAX_SEND_BLOCK || nv[i].value_len > SL_SPDY_MAX_SEND_BLOCK)
            return SL_ERR_TOO_LARGE;
        total += 8 + nv[i].name_len + nv[i].value_len;
        if (total > SL_SPDY_MAX_SEND_BLOCK)
            return SL_ERR_TOO_LARGE;
    }
    if (has_duplicate(nv, n))
        return SL_ERR_INVAL;
    return (long long)total;
}

static void serialise(uint8_t *p, const sl_spdy_nv *nv, size_t n)
{
    put32(p, (uint32_t)n);
    p += 4;
    for (size_t i = 0; i < n; i++) {
        put32(p, (uint32_t)nv[i].name_len);
        p += 4;
        for (size_t k = 0; k < nv[i].name_len; k++)
            *p++ = (uint8_t)lower(nv[i].name[k]);
        put32(p, (uint32_t)nv[i].value_len);
        p += 4;
        if (nv[i].value_len)
            memcpy(p, nv[i].value, nv[i].value_len);
        p += nv[i].value_len;
    }
}

static int deflater_broken(sl_spdy_deflater *d, int err)
{
    d->broken = true;
    return err;
}

/* Runs deflate(Z_SYNC_FLUSH) until all of the block is out. */
static int deflate_all(sl_spdy_deflater *d, size_t raw_len, size_t *out_len)
{
    size_t len = 0;
    d->z.next_in = d->raw;
    d->z.avail_in = (uInt)raw_len;
    for (;;) {
        if (len == d->out_cap && grow(&d->out, &d->out_cap, d->out_cap * 2) != SL_OK)
            return SL_ERR_NOMEM;
        d->z.next_out = d->out + len;
        d->z.avail_out = (uInt)(d->out_cap - len);
        int rc = deflate(&d->z, Z_SYNC_FLUSH);
        len = d->out_cap - d->z.avail_out;
        /* Z_BUF_ERROR: nothing left to do after an exactly full buffer */
        if (rc != Z_OK && rc != Z_BUF_ERROR)
            return SL_ERR_COMPRESSION;
        if (d->z.avail_out != 0 || rc == Z_BUF_ERROR)
            break;
    }
    if (d->z.avail_in != 0)
        return SL_ERR_COMPRESSION;
    *out_len = len;
    return SL_OK;
}

int sl_spdy_nv_compress(sl_spdy_deflater *d, const sl_spdy_nv *nv, size_t n, const uint8_t **block,
                        size_t *block_len)
{
    if (d->broken || (!d->ready && !d->parked))
        return SL_ERR_COMPRESSION;
    long long size = raw_size(nv, n);
    if (size < 0)
        return (int)size;
    if (d->parked && deflater_resume(d) != SL_OK)
        return SL_ERR_NOMEM; /* nothing fed to zlib yet: not broken */
    size_t raw_len = (size_t)size;
    if (grow(&d->raw, &d->raw_cap, raw_len) != SL_OK)
        return SL_ERR_NOMEM; /* nothing fed to zlib yet: not broken */
    serialise(d->raw, nv, n);
    size_t bound = deflateBound(&d->z, (uLong)raw_len) + 16;
    if (grow(&d->out, &d->out_cap, bound) != SL_OK)
        return SL_ERR_NOMEM;
    size_t out_len;
    int rc = deflate_all(d, raw_len, &out_len);
    if (rc != SL_OK)
        return deflater_broken(d, rc);
    deflater_park(d);
    *block = d->out;
    *block_len = out_len;
    return SL_OK;
}

/* ---- receiving ------------------------------------------------------------- */

int sl_spdy_inflater_init(sl_spdy_inflater *in, size_t max_out)
{
    memset(in, 0, sizeof(*in));
    if (inflateInit(&in->z) != Z_OK)
        return SL_ERR_NOMEM;
    in->ready = true;
    in->max_out = max_out;
    return SL_OK;
}

void sl_spdy_inflater_fini(sl_spdy_inflater *in)
{
    if (in->ready)
        inflateEnd(&in->z);
    free(in->buf);
    free(in->pairs);
    free(in->hist);
    memset(in, 0, sizeof(*in));
}

/* At a flush boundary: keeps the window and ends zlib's state (left live
 * when the window cannot be kept). */
static void inflater_park(sl_spdy_inflater *in)
{
    uInt n = 0;
    if (inflateGetDictionary(&in->z, NULL, &n) != Z_OK)
        return;
    uint8_t *h = malloc(n ? n : 1);
    if (!h || inflateGetDictionary(&in->z, h, &n) != Z_OK) {
        free(h);
        return;
    }
    inflateEnd(&in->z);
    in->hist = h;
    in->hist_len = n;
    in->ready = false;
    in->parked = true;
}

/* A raw context (past the stream's zlib header) on the kept window. */
static int inflater_resume(sl_spdy_inflater *in)
{
    memset(&in->z, 0, sizeof(in->z));
    if (inflateInit2(&in->z, -MAX_WBITS) != Z_OK)
        return SL_ERR_NOMEM;
    if (inflateSetDictionary(&in->z, in->hist, (uInt)in->hist_len) != Z_OK) {
        inflateEnd(&in->z);
        return SL_ERR_NOMEM;
    }
    free(in->hist);
    in->hist = NULL;
    in->hist_len = 0;
    in->parked = false;
    in->ready = true;
    return SL_OK;
}

static int inflater_broken(sl_spdy_inflater *in, int err)
{
    in->broken = true;
    return err;
}

/* Makes room for more output, never beyond max_out + 1 bytes: producing
 * byte max_out + 1 is how a bomb is detected. */
static int inflate_room(sl_spdy_inflater *in)
{
    size_t limit = in->max_out + 1;
    if (in->len < in->cap)
        return SL_OK;
    if (in->cap >= limit)
        return SL_ERR_TOO_LARGE;
    size_t ncap = in->cap ? in->cap * 2 : INFLATE_FIRST_CAP;
    if (ncap > limit)
        ncap = limit;
    return grow(&in->buf, &in->cap, ncap);
}

/* One inflate() step. Returns 1 when the block is complete, 0 to go on.
 * *dtype keeps zlib's data_type of the last call that made progress: a
 * call that could not (Z_BUF_ERROR) reports a state it made up on entry. */
static int inflate_step(sl_spdy_inflater *in, int *dtype)
{
    int rc = inflate_room(in);
    if (rc != SL_OK)
        return rc;
    in->z.next_out = in->buf + in->len;
    in->z.avail_out = (uInt)(in->cap - in->len);
    rc = inflate(&in->z, Z_SYNC_FLUSH);
    in->len = in->cap - in->z.avail_out;
    if (rc == Z_OK)
        *dtype = in->z.data_type;
    if (rc == Z_NEED_DICT) {
        if (in->z.adler != SL_SPDY_DICT_ADLER ||
            inflateSetDictionary(&in->z, sl_spdy_dict, SL_SPDY_DICT_LEN) != Z_OK)
            return SL_ERR_COMPRESSION;
        return 0;
    }
    if (rc == Z_BUF_ERROR && in->z.avail_in == 0)
        return 1; /* no input left and nothing more to flush */
    if (rc != Z_OK)
        return SL_ERR_COMPRESSION; /* includes Z_STREAM_END: the shared stream may not end */
    if (in->len > in->max_out)
        return SL_ERR_TOO_LARGE;
    return (in->z.avail_in == 0 && in->z.avail_out != 0) ? 1 : 0;
}

/* Did the block end where a sync flush leaves the stream? Its last bytes
 * must be the empty stored block, and inflate must have stopped between
 * two deflate blocks with no bits left over (zlib's data_type). Input used
 * up anywhere else means the block was cut: the next block would be
 * decoded from the wrong place. */
static bool at_flush_boundary(int dtype, const uint8_t *block, size_t len)
{
    static const uint8_t marker[SYNC_MARKER_LEN] = {0x00, 0x00, 0xff, 0xff};
    if (len < sizeof(marker) || memcmp(block + len - sizeof(marker), marker, sizeof(marker)))
        return false;
    return dtype == INFLATE_BETWEEN_BLOCKS;
}

int sl_spdy_inflate_block(sl_spdy_inflater *in, const uint8_t *block, size_t block_len,
                          uint8_t **raw, size_t *raw_len)
{
    if (in->broken || (!in->ready && !in->parked))
        return SL_ERR_COMPRESSION;
    if (in->parked && inflater_resume(in) != SL_OK)
        return SL_ERR_NOMEM; /* the block was not read: context intact */
    in->len = 0;
    in->z.next_in = (Bytef *)block;
    in->z.avail_in = (uInt)block_len;
    int rc = 0, dtype = -1;
    while (rc == 0 && block_len)
        rc = inflate_step(in, &dtype);
    if (rc < 0)
        return inflater_broken(in, rc);
    if (in->len > in->max_out)
        return inflater_broken(in, SL_ERR_TOO_LARGE);
    if (!at_flush_boundary(dtype, block, block_len))
        return inflater_broken(in, SL_ERR_COMPRESSION);
    /* spare byte so the parser can NUL-terminate the last value */
    if (in->len == in->cap && grow(&in->buf, &in->cap, in->len + 1) != SL_OK)
        return SL_ERR_NOMEM; /* the block was fully inflated: context intact */
    inflater_park(in);
    *raw = in->buf;
    *raw_len = in->len;
    return SL_OK;
}

/* Skips one length-prefixed string at *off; false if it runs past the end. */
static bool skip_string(const uint8_t *raw, size_t raw_len, size_t *off)
{
    if (raw_len - *off < 4)
        return false;
    uint32_t l = get32(raw + *off);
    *off += 4;
    if (l > raw_len - *off)
        return false;
    *off += l;
    return true;
}

/* Walks the pair structure without storing it: true with *end just past
 * the last pair, false if the block ends first. Each pair takes at least 8
 * bytes, so a huge count stops at the end of the block. */
static bool nv_walk(const uint8_t *raw, size_t raw_len, size_t *end)
{
    if (raw_len < 4)
        return false;
    uint32_t count = get32(raw);
    size_t off = 4;
    for (uint32_t i = 0; i < count; i++)
        if (!skip_string(raw, raw_len, &off) || !skip_string(raw, raw_len, &off))
            return false;
    *end = off;
    return true;
}

/* Reads one length-prefixed string at *off (nv_walk checked the lengths). */
static void take_string(const uint8_t *raw, size_t *off, const char **s, size_t *slen)
{
    *slen = get32(raw + *off);
    *s = (const char *)raw + *off + 4;
    *off += 4 + *slen;
}

int sl_spdy_nv_parse(uint8_t *raw, size_t raw_len, sl_spdy_nv *pairs, size_t max_pairs, size_t *n)
{
    *n = 0;
    size_t end;
    if (!nv_walk(raw, raw_len, &end) || end != raw_len)
        return SL_ERR_PROTO;
    uint32_t count = get32(raw);
    if (count > max_pairs)
        return SL_ERR_TOO_LARGE;
    size_t off = 4;
    for (uint32_t i = 0; i < count; i++) {
        sl_spdy_nv *p = &pairs[i];
        take_string(raw, &off, &p->name, &p->name_len);
        take_string(raw, &off, &p->value, &p->value_len);
        if (p->name_len == 0 || memchr(p->name, 0, p->name_len))
            return SL_ERR_PROTO;
    }
    if (has_duplicate(pairs, count))
        return SL_ERR_PROTO;
    /* Every length is read: now the byte after each string may become a
     * NUL (it is the next length prefix, or the spare byte at the end). */
    for (uint32_t i = 0; i < count; i++) {
        raw[pairs[i].name + pairs[i].name_len - (const char *)raw] = 0;
        raw[pairs[i].value + pairs[i].value_len - (const char *)raw] = 0;
    }
    *n = count;
    return SL_OK;
}

int sl_spdy_nv_decode(sl_spdy_inflater *in, const uint8_t *block, size_t block_len,
                      size_t max_pairs, const sl_spdy_nv **nv, size_t *n)
{
    uint8_t *raw;
    size_t raw_len, end;
    *n = 0;
    *nv = in->pairs;
    int rc = sl_spdy_inflate_block(in, block, block_len, &raw, &raw_len);
    if (rc != SL_OK)
        return rc;
    /* An NV block that needs more bytes than its block gave is a cut
     * block as far as we can tell (see the header): fatal, like zlib errors. */
    if (!nv_walk(raw, raw_len, &end))
        return inflater_broken(in, SL_ERR_PROTO);
    /* The walk bounds the count by the bytes present; the parser stores at
     * most min(count, max_pairs) pairs. */
    size_t want = get32(raw);
    if (want > max_pairs)
        want = 0; /* refused before anything is stored */
    if (want > in->pairs_cap) {
        sl_spdy_nv *np = realloc(in->pairs, want * sizeof(*np));
        if (!np)
            return SL_ERR_NOMEM;
        in->pairs = np;
        in->pairs_cap = want;
    }
    *nv = in->pairs;
    return sl_spdy_nv_parse(raw, raw_len, in->pairs, max_pairs, n);
}
