/* SPDY/3 frame codec: one frame at a time, no I/O, no stream state.
 *
 * The reader (sl_spdy_reader) takes socket bytes in any split and turns
 * them into events: a whole control frame (payload buffered, bounded by a
 * limit), or a DATA frame as begin / payload chunks / end, so a 16 MiB DATA
 * frame is never buffered. The writers serialise one frame into an sl_bufq,
 * atomically: either the whole frame is queued or nothing is.
 *
 * Wire layout and constants follow moby/spdystream v0.5.0 (protocol notes
 * §4.1, §4.2): control frames carry version 3, all integers big-endian,
 * the reserved high bit of every 31-bit id is ignored on read and sent 0.
 */
#ifndef SL_SPDY_FRAME_H
#define SL_SPDY_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/bufq.h"

#define SL_SPDY_VERSION 3
#define SL_SPDY_FRAME_HEADER_LEN 8
#define SL_SPDY_MAX_LENGTH 0xFFFFFFu      /* 24-bit length field */
#define SL_SPDY_MAX_STREAM_ID 0x7FFFFFFFu /* 31-bit ids */
#define SL_SPDY_MAX_WINDOW 0x7FFFFFFF     /* largest legal flow-control window */

/* Control frame types. 5 (NOOP) and 10 (CREDENTIAL) are deliberately absent:
 * spdystream does not know them, and the reader skips any unknown type. */
enum {
    SL_SPDY_SYN_STREAM = 1,
    SL_SPDY_SYN_REPLY = 2,
    SL_SPDY_RST_STREAM = 3,
    SL_SPDY_SETTINGS = 4,
    SL_SPDY_PING = 6,
    SL_SPDY_GOAWAY = 7,
    SL_SPDY_HEADERS = 8,
    SL_SPDY_WINDOW_UPDATE = 9,
};

/* Flags. */
#define SL_SPDY_FLAG_FIN 0x01            /* DATA, SYN_STREAM, SYN_REPLY, HEADERS */
#define SL_SPDY_FLAG_UNIDIRECTIONAL 0x02 /* SYN_STREAM */
#define SL_SPDY_FLAG_CLEAR_SETTINGS 0x01 /* SETTINGS */

/* RST_STREAM status codes (0 is invalid on the wire). */
enum {
    SL_SPDY_PROTOCOL_ERROR = 1,
    SL_SPDY_INVALID_STREAM = 2,
    SL_SPDY_REFUSED_STREAM = 3,
    SL_SPDY_UNSUPPORTED_VERSION = 4,
    SL_SPDY_CANCEL = 5,
    SL_SPDY_INTERNAL_ERROR = 6,
    SL_SPDY_FLOW_CONTROL_ERROR = 7,
    SL_SPDY_STREAM_IN_USE = 8,
    SL_SPDY_STREAM_ALREADY_CLOSED = 9,
    SL_SPDY_INVALID_CREDENTIALS = 10,
    SL_SPDY_FRAME_TOO_LARGE = 11,
};

/* GOAWAY status codes. */
enum {
    SL_SPDY_GOAWAY_OK = 0,
    SL_SPDY_GOAWAY_PROTOCOL_ERROR = 1,
    SL_SPDY_GOAWAY_INTERNAL_ERROR = 2,
};

/* SETTINGS ids (24 bits on the wire). */
enum {
    SL_SPDY_SETTINGS_UPLOAD_BANDWIDTH = 1,
    SL_SPDY_SETTINGS_DOWNLOAD_BANDWIDTH = 2,
    SL_SPDY_SETTINGS_ROUND_TRIP_TIME = 3,
    SL_SPDY_SETTINGS_MAX_CONCURRENT_STREAMS = 4,
    SL_SPDY_SETTINGS_CURRENT_CWND = 5,
    SL_SPDY_SETTINGS_DOWNLOAD_RETRANS_RATE = 6,
    SL_SPDY_SETTINGS_INITIAL_WINDOW_SIZE = 7,
    SL_SPDY_SETTINGS_CLIENT_CERTIFICATE_VECTOR_SIZE = 8,
};

/* The decoded 8-byte frame header. For DATA frames `type` is 0 and
 * `stream_id` is set; for control frames `version` and `type` are set. */
typedef struct sl_spdy_frame_hdr {
    bool control;
    uint16_t version;
    uint16_t type;
    uint32_t stream_id;
    uint8_t flags;
    uint32_t length;
} sl_spdy_frame_hdr;

/* Decodes an 8-byte header (no validation beyond bit extraction). */
void sl_spdy_hdr_decode(const uint8_t b[SL_SPDY_FRAME_HEADER_LEN], sl_spdy_frame_hdr *h);

/* ---- reader ------------------------------------------------------------ */

typedef enum sl_spdy_ev_type {
    SL_SPDY_EV_CONTROL = 1,    /* a complete known control frame: hdr, data/len = payload */
    SL_SPDY_EV_UNKNOWN = 2,    /* unknown control type: hdr only; the payload is skipped */
    SL_SPDY_EV_DATA_BEGIN = 3, /* DATA header read: hdr (stream_id, flags, length) */
    SL_SPDY_EV_DATA = 4,       /* a piece of the DATA payload: data/len (len > 0) */
    SL_SPDY_EV_DATA_END = 5,   /* the DATA payload is complete (also for length 0) */
} sl_spdy_ev_type;

typedef struct sl_spdy_event {
    sl_spdy_ev_type type;
    sl_spdy_frame_hdr hdr; /* the current frame's header, for every event type */
    const uint8_t *data;   /* points into the caller's input or the reader's buffer */
    size_t len;
} sl_spdy_event;

typedef enum sl_spdy_rstate {
    SL_SPDY_R_HEADER,
    SL_SPDY_R_CONTROL,
    SL_SPDY_R_DATA,
    SL_SPDY_R_DATA_END,
    SL_SPDY_R_SKIP,
    SL_SPDY_R_FAILED,
} sl_spdy_rstate;

typedef struct sl_spdy_reader {
    sl_spdy_rstate state;
    uint8_t hbuf[SL_SPDY_FRAME_HEADER_LEN];
    size_t hhave;
    sl_spdy_frame_hdr cur;
    uint32_t remaining; /* payload bytes of the current frame still to read */
    uint8_t *buf;       /* control payload being assembled (heap, grows) */
    size_t blen, bcap;
    uint32_t max_data;    /* largest DATA payload accepted */
    uint32_t max_control; /* largest known control payload accepted */
    int err;              /* sticky error once FAILED */
} sl_spdy_reader;

/* Initialises a reader. max_data / max_control bound the payload lengths
 * accepted (values above SL_SPDY_MAX_LENGTH are clamped). Never fails:
 * memory is allocated on the first buffered control frame. */
void sl_spdy_reader_init(sl_spdy_reader *r, uint32_t max_data, uint32_t max_control);
/* Frees the reader's buffer. The reader may be re-initialised afterwards. */
void sl_spdy_reader_fini(sl_spdy_reader *r);

/* Consumes input from data[0, len) until one event is complete.
 * Returns 1 and fills *ev when an event is ready, 0 when all input was
 * consumed without completing one; *used always gets the bytes consumed
 * (call again with data + *used). ev->data stays valid until the next
 * call (it points into `data` or into the reader). Errors (sticky; the byte
 * stream cannot be resynchronised):
 *   SL_ERR_UNSUPPORTED  control frame version != 3 (ev->hdr is filled)
 *   SL_ERR_TOO_LARGE    DATA or known control payload above its limit
 *   SL_ERR_NOMEM        control payload buffer could not grow
 * Unknown control types give SL_SPDY_EV_UNKNOWN and are skipped by length,
 * whatever their size, as the SPDY drafts require. */
int sl_spdy_reader_next(sl_spdy_reader *r, const uint8_t *data, size_t len, size_t *used,
                        sl_spdy_event *ev);

/* ---- control payloads ---------------------------------------------------- */

typedef struct sl_spdy_ctrl {
    uint16_t type;
    uint8_t flags;
    uint32_t stream_id; /* SYN_*, RST, HEADERS, WINDOW_UPDATE; GOAWAY last-good id */
    uint32_t assoc_id;  /* SYN_STREAM */
    uint8_t priority;   /* SYN_STREAM, 3 bits */
    uint8_t slot;       /* SYN_STREAM */
    uint32_t status;    /* RST_STREAM, GOAWAY */
    uint32_t value;     /* PING id, WINDOW_UPDATE delta */
    uint32_t count;     /* SETTINGS entries */
    const uint8_t *nv;  /* compressed header block (SYN_*, HEADERS) or SETTINGS entries */
    size_t nv_len;
} sl_spdy_ctrl;

/* Decodes and checks the payload of a known control frame, with the checks
 * spdystream's reader makes (protocol notes §4.2):
 *   SYN_STREAM len >= 10, SYN_REPLY/HEADERS len >= 4, and stream id != 0;
 *   RST_STREAM len == 8, stream id != 0, status != 0;
 *   SETTINGS len == 4 + 8 * count;
 *   PING len == 4, flags == 0, id != 0;
 *   GOAWAY, WINDOW_UPDATE len == 8, flags == 0.
 * Pointers in *c point into p. Returns SL_OK, SL_ERR_PROTO on any violation,
 * SL_ERR_UNSUPPORTED for a type this codec does not know. */
int sl_spdy_ctrl_parse(const sl_spdy_frame_hdr *h, const uint8_t *p, size_t len, sl_spdy_ctrl *c);

/* Reads SETTINGS entry i (< c->count) of a parsed SETTINGS frame. */
void sl_spdy_settings_entry(const sl_spdy_ctrl *c, uint32_t i, uint8_t *flags, uint32_t *id,
                            uint32_t *value);

/* ---- writers ------------------------------------------------------------- */
/* Each appends exactly one frame to out. Returns SL_OK, SL_ERR_INVAL (an id
 * above 31 bits, a payload above 24 bits, a zero id where the wire forbids
 * it), or SL_ERR_NOMEM; on error nothing was appended. */

int sl_spdy_write_syn_stream(sl_bufq *out, uint32_t id, uint32_t assoc_id, uint8_t priority,
                             uint8_t flags, const uint8_t *block, size_t block_len);
int sl_spdy_write_syn_reply(sl_bufq *out, uint32_t id, uint8_t flags, const uint8_t *block,
                            size_t block_len);
int sl_spdy_write_headers(sl_bufq *out, uint32_t id, uint8_t flags, const uint8_t *block,
                          size_t block_len);
int sl_spdy_write_rst_stream(sl_bufq *out, uint32_t id, uint32_t status);
/* entries: n triples {flags, id, value} packed as uint32_t[3]. */
int sl_spdy_write_settings(sl_bufq *out, uint8_t flags, const uint32_t (*entries)[3], size_t n);
int sl_spdy_write_ping(sl_bufq *out, uint32_t id);
int sl_spdy_write_goaway(sl_bufq *out, uint32_t last_good_id, uint32_t status);
int sl_spdy_write_window_update(sl_bufq *out, uint32_t id, uint32_t delta);
/* One DATA frame with its payload (len may be 0, e.g. a FIN). */
int sl_spdy_write_data(sl_bufq *out, uint32_t id, uint8_t flags, const uint8_t *data, size_t len);
/* One DATA frame whose payload is moved (not copied twice) from the head
 * of src; len <= sl_bufq_len(src). */
int sl_spdy_write_data_from(sl_bufq *out, uint32_t id, uint8_t flags, sl_bufq *src, size_t len);

#endif
