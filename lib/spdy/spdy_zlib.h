/* SPDY/3 Name/Value header blocks and their zlib compression.
 *
 * A connection has one compression context per direction, shared by every
 * SYN_STREAM, SYN_REPLY and HEADERS frame for the life of the session
 * (protocol notes §4.3, §4.4): sl_spdy_deflater for what we send,
 * sl_spdy_inflater for what we receive. Both use the SPDY/3 dictionary.
 * Every received header block must go through the inflater, in order, even
 * when the frame carrying it is refused; otherwise the context desynchronises.
 *
 * Uncompressed layout: num_pairs(32), then per pair name_len(32) name
 * value_len(32) value. Several values of one name are joined with NUL.
 */
#ifndef SL_SPDY_ZLIB_H
#define SL_SPDY_ZLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#define SL_SPDY_DICT_LEN 1423
#define SL_SPDY_DICT_ADLER 0xE3C6A7C2u

/* Largest uncompressed block we build when sending; equal to the default
 * receive limit so we never send what we would refuse. */
#define SL_SPDY_MAX_SEND_BLOCK 65536u
/* Compression level and strategy of the deflater. Go's deflater (used by
 * spdystream) never emits matches shorter than 4 bytes; zlib's filtered
 * strategy drops short matches too, which makes our first block of an
 * empty header set identical to spdystream's after the 2-byte zlib header
 * (which declares our smaller window). Later blocks depend on
 * the history and differ in bytes, never in meaning. */
#define SL_SPDY_ZLIB_LEVEL 9
#define SL_SPDY_ZLIB_STRATEGY Z_FILTERED
/* Deflater memory, which every SPDY session keeps for its whole life: a
 * 2 KiB window still holds the whole 1423-byte dictionary, and header
 * blocks are small, so memLevel 1 loses little. zlib's defaults (15, 8)
 * cost about 100 KiB of touched memory per session; these about 10 KiB.
 * Any inflater (the peer's uses a 32 KiB window) reads the result. */
#define SL_SPDY_ZLIB_WINDOW_BITS 11
#define SL_SPDY_ZLIB_MEM_LEVEL 1

/* The SPDY/3 header compression dictionary (draft 3, §2.6.10.1). */
extern const uint8_t sl_spdy_dict[SL_SPDY_DICT_LEN];

/* One header. Received names and values are NUL-terminated (the NUL is not
 * counted in the lengths) and point into the inflater's buffer. */
typedef struct sl_spdy_nv {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
} sl_spdy_nv;

/* Returns the first header whose name equals `name` ignoring ASCII case,
 * or NULL. */
const sl_spdy_nv *sl_spdy_nv_find(const sl_spdy_nv *nv, size_t n, const char *name);

/* ---- sending --------------------------------------------------------------- */

/* Between header blocks both contexts are parked: zlib's state (about 15
 * KiB for the deflater, 10 for the inflater, touched) is ended. The
 * inflater keeps the history the peer's next block may refer to (up to 32
 * KiB: the dictionary and the blocks so far, about 2 KiB for an exec
 * session) and resumes a raw context on it. The deflater keeps nothing:
 * our next block starts from an empty window, which any inflater reads the
 * same (a back-reference is never required), at the cost of a little
 * compression on the few blocks a session sends after its first. A
 * session that has set up its streams sends few or no more headers, so an
 * idle session keeps the inflater's history alone (issue 16: 1,000
 * concurrent sessions). */
typedef struct sl_spdy_deflater {
    z_stream z;
    bool ready;  /* deflateInit2 done (and not parked) */
    bool broken; /* zlib failed mid-block; the peer's context is now out of step */
    bool parked; /* zlib's state ended; the next block starts a raw context */
    uint8_t *raw, *out;
    size_t raw_cap, out_cap;
} sl_spdy_deflater;

/* Prepares the context (level 9, dictionary set). Returns SL_OK or
 * SL_ERR_NOMEM. */
int sl_spdy_deflater_init(sl_spdy_deflater *d);
void sl_spdy_deflater_fini(sl_spdy_deflater *d);

/* Builds and compresses one header block (names are lowercased on the way
 * out; values are copied as given) ending with a sync flush. On success
 * *block / *block_len describe the compressed bytes, owned by d and valid
 * until the next call. Errors:
 *   SL_ERR_INVAL      empty name, NUL in a name, or two names equal
 *                     ignoring case (nothing compressed; d still usable)
 *   SL_ERR_TOO_LARGE  the uncompressed block exceeds SL_SPDY_MAX_SEND_BLOCK
 *                     (nothing compressed)
 *   SL_ERR_NOMEM, SL_ERR_COMPRESSION  d is broken for good: every later
 *                     call fails with SL_ERR_COMPRESSION. */
int sl_spdy_nv_compress(sl_spdy_deflater *d, const sl_spdy_nv *nv, size_t n, const uint8_t **block,
                        size_t *block_len);

/* ---- receiving ------------------------------------------------------------- */

typedef struct sl_spdy_inflater {
    z_stream z;
    bool ready, broken;
    bool parked; /* zlib's state ended between blocks; hist holds the window */
    uint8_t *hist;
    size_t hist_len;
    size_t max_out; /* decompressed size limit per block */
    uint8_t *buf;   /* decompressed block (+1 spare byte for a NUL) */
    size_t cap, len;
    sl_spdy_nv *pairs;
    size_t pairs_cap;
} sl_spdy_inflater;

/* Prepares the context; max_out bounds the decompressed size of one block.
 * Returns SL_OK or SL_ERR_NOMEM. */
int sl_spdy_inflater_init(sl_spdy_inflater *in, size_t max_out);
void sl_spdy_inflater_fini(sl_spdy_inflater *in);

/* Decompresses one block (the frame's NV bytes, exactly). Sets the
 * dictionary when zlib asks for it. Output grows only up to max_out bytes:
 * a block that would inflate further is refused while inflating (a bomb
 * never expands in memory). The block must end exactly on a sync-flush
 * boundary, as every SPDY/3 sender ends each block: its last bytes are the
 * empty stored block 00 00 ff ff and inflate stopped between two deflate
 * blocks with no bits left over. A block cut short (or extended) anywhere
 * else is refused: the shared stream would go on decoding from the wrong
 * place. *raw / *raw_len describe the result, owned by `in`, valid until
 * the next call; raw[*raw_len] is writable. Errors, all of which leave the
 * context broken (every later call fails with SL_ERR_COMPRESSION), because
 * the shared stream is no longer in step:
 *   SL_ERR_COMPRESSION  corrupt data, wrong dictionary id, end of stream,
 *                       an empty block, a block not ending on a sync flush
 *   SL_ERR_TOO_LARGE    the block inflates beyond max_out
 *   SL_ERR_NOMEM */
int sl_spdy_inflate_block(sl_spdy_inflater *in, const uint8_t *block, size_t block_len,
                          uint8_t **raw, size_t *raw_len);

/* Parses a decompressed block in place into pairs[0, *n). raw must have
 * raw_len + 1 writable bytes: names and values are NUL-terminated in place.
 * pairs must hold min(num_pairs, max_pairs) entries. Errors (the
 * compression context is unaffected):
 *   SL_ERR_PROTO      truncated (a count or length runs past raw_len) or
 *                     trailing bytes, empty name, NUL in a name, or a
 *                     duplicate name (compared ignoring case)
 *   SL_ERR_TOO_LARGE  a complete block with num_pairs > max_pairs */
int sl_spdy_nv_parse(uint8_t *raw, size_t raw_len, sl_spdy_nv *pairs, size_t max_pairs, size_t *n);

/* Inflate + parse. Pairs are stored in `in` (valid until the next call).
 * Returns the errors of both steps; sl_spdy_inflater_broken() tells the
 * fatal ones from the per-frame ones (which leave the context in step):
 *   - every inflate error (above) is fatal;
 *   - a truncated NV block (its count or a length needs more bytes than
 *     the block inflated to) is SL_ERR_PROTO and fatal: the inflate check
 *     passed, so the block ended on a flush boundary, but we cannot tell a
 *     sender that compressed a short NV block (context in step) from a
 *     block cut at a flush point inside it (a sender that flushes more than
 *     once per block, a stored block ending in 00 00 ff ff): then the next
 *     blocks would silently decode against a wrong history. No correct
 *     sender produces either, and spdystream also ends the session on it;
 *   - a complete NV block that is malformed (trailing bytes, empty or
 *     duplicate names, NUL in a name: SL_ERR_PROTO; more than max_pairs:
 *     SL_ERR_TOO_LARGE) is per frame: the sender's block ended where ours
 *     did, so the context is in step. */
int sl_spdy_nv_decode(sl_spdy_inflater *in, const uint8_t *block, size_t block_len,
                      size_t max_pairs, const sl_spdy_nv **nv, size_t *n);

static inline bool sl_spdy_inflater_broken(const sl_spdy_inflater *in)
{
    return in->broken;
}

#endif
