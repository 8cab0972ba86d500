/* gRPC Length-Prefixed-Message framing (I/O free).
 *
 * A message on the wire is a 1-byte compressed flag, a 4-byte big-endian
 * length and that many bytes of protobuf. DATA frame boundaries have nothing
 * to do with message boundaries, so the decoder is resumable at every byte. */
#ifndef SL_GRPC_FRAME_H
#define SL_GRPC_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_GRPC_PREFIX_LEN 5
/* The kubelet's cri-client receive limit; also our default receive limit. */
#define SL_GRPC_DEFAULT_MAX_RECV_MESSAGE (16u * 1024 * 1024)
/* The message buffer grows as bytes arrive (never to the announced length
 * at once), starting from this many bytes. */
#define SL_GRPC_DECODER_MIN_ALLOC 256u

typedef enum sl_grpc_dec_state {
    SL_GRPC_DEC_PREFIX,  /* reading the 5-byte prefix */
    SL_GRPC_DEC_PAYLOAD, /* reading the message */
    SL_GRPC_DEC_DONE,    /* a complete message waits for sl_grpc_decoder_take */
    SL_GRPC_DEC_FAILED,  /* an error was reported; nothing more is decoded */
} sl_grpc_dec_state;

typedef struct sl_grpc_decoder {
    uint32_t max; /* largest message accepted */
    sl_grpc_dec_state state;
    uint8_t prefix[SL_GRPC_PREFIX_LEN];
    size_t nprefix; /* prefix bytes seen */
    uint32_t len;   /* announced length (kept after SL_ERR_TOO_LARGE) */
    uint32_t have;  /* payload bytes seen */
    uint8_t *buf;   /* payload so far */
    size_t cap;
    int err; /* the error reported, once failed */
} sl_grpc_decoder;

/* max: the largest message length accepted. */
void sl_grpc_decoder_init(sl_grpc_decoder *d, uint32_t max);
void sl_grpc_decoder_fini(sl_grpc_decoder *d);

/* Consumes bytes from data (at most len); *used says how many. Returns
 *   1  a message is complete: take it with sl_grpc_decoder_take before
 *      feeding more (the rest of the input is not consumed),
 *   0  all input consumed, more is needed,
 *   SL_ERR_UNSUPPORTED  the compressed flag is 1 (we accept no encoding),
 *   SL_ERR_PROTO        the flag is neither 0 nor 1,
 *   SL_ERR_TOO_LARGE    the announced length exceeds max,
 *   SL_ERR_NOMEM.
 * After an error the decoder stays failed and returns the same code. */
int sl_grpc_decoder_feed(sl_grpc_decoder *d, const uint8_t *data, size_t len, size_t *used);

/* Hands the complete message to the caller: *msg is malloc'd (caller frees;
 * NULL for an empty message), *len its length. The decoder then waits for
 * the next prefix. Returns SL_ERR_STATE when no message is complete. */
int sl_grpc_decoder_take(sl_grpc_decoder *d, uint8_t **msg, size_t *len);

/* True when no message is partly received (the input ended cleanly). */
bool sl_grpc_decoder_idle(const sl_grpc_decoder *d);

/* Bytes of the current partial message received and announced (for error
 * texts); both 0 when idle. */
void sl_grpc_decoder_progress(const sl_grpc_decoder *d, size_t *have, size_t *want);

/* Writes the uncompressed prefix of a message of len bytes. */
void sl_grpc_frame_prefix(uint8_t out[SL_GRPC_PREFIX_LEN], uint32_t len);

#endif
