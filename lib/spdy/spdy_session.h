/* An I/O-free SPDY/3.1 session (streams, flow control), client or server.
 *
 * Wire behaviour follows moby/spdystream v0.5.0 as kubectl, client-go and
 * the kubelet use it (protocol notes §4, §5, §7), with two deliberate
 * improvements: real flow control towards peers that use it, and no
 * head-of-line blocking (one slow stream never stalls the others).
 *
 * Driving it:
 *   - sl_spdy_session_recv() takes socket bytes (any split) and fires the
 *     callbacks; control answers (PING echo, RST_STREAM, GOAWAY, ...) are
 *     appended to `out` at once.
 *   - stream data is queued per stream by sl_spdy_stream_send(); it reaches
 *     `out` only in sl_spdy_session_flush(), round-robin across streams,
 *     while sl_bufq_len(out) stays under the caller's high-water mark. Call
 *     it after every recv (a WINDOW_UPDATE or SYN_REPLY may have unblocked a
 *     stream), after sends, and whenever the socket drained `out`.
 *   - the caller writes `out` to the socket and consumes what was written.
 *
 * Flow control. Outbound: the peer's windows (SETTINGS INITIAL_WINDOW_SIZE,
 * per-stream WINDOW_UPDATE, and the SPDY/3.1 session window, stream id 0)
 * are always tracked, but enforced only once the peer has shown it uses
 * them: stream windows after it sent INITIAL_WINDOW_SIZE or any
 * WINDOW_UPDATE, the session window after it sent a WINDOW_UPDATE for
 * stream 0. spdystream sends neither, so it is never throttled and we never
 * wait for credit it will not send.
 * Inbound: received DATA goes to on_data at once, whatever other streams
 * do. Our stream windows are limits.initial_window (the SPDY default,
 * 64 KiB, unless set), or the size we announced with
 * sl_spdy_session_announce_window(). Credit is returned
 * with WINDOW_UPDATE only to a peer that uses flow control, or after we
 * announced, unless the peer then replied to one of our streams without
 * any sign of flow control (spdystream: it would never read the credit,
 * and bytes sent to a socket it closed come back as a RST that destroys
 * what we have not read yet): for a stream as the application reports what it has used with
 * sl_spdy_stream_consumed(); for the session (stream 0) as bytes arrive,
 * so a stalled stream holds at most its own window and never takes the
 * session window from the others (the stream windows, times max_streams,
 * bound what the application holds).
 * SETTINGS: we send it only when announcing, which a server does not do on
 * its own (the Kubernetes server side, like the Go one, never sends
 * SETTINGS first). When the peer sends INITIAL_WINDOW_SIZE and we have not
 * announced, we answer with ours (limits.initial_window), so that peer knows at once that
 * we enforce our windows; spdystream never sends SETTINGS, so it never gets
 * one from us.
 *
 * Back-pressure, per stream, is the application's: it keeps the bytes
 * on_data gave it in its own bounded buffer and calls consumed() as it
 * drains them.
 *   - Towards a flow-control peer, not consuming closes that stream's
 *     window: the peer stops sending on it, the other streams go on.
 *   - Towards spdystream (no flow control) nothing stops the peer, so when
 *     a stream's buffer exceeds the application's bound it must reset the
 *     stream: sl_spdy_stream_reset(s, id, SL_SPDY_CANCEL) (spdystream reads
 *     a reset as EOF). It must not stop reading the socket for one stream,
 *     which would stall all of them.
 *   - Outbound, the application watches sl_spdy_stream_pending() and stops
 *     reading a stream's source while it is above its bound.
 *
 * Peer errors (protocol notes §4.2, §4.5) and what they become:
 *   - control frame version != 3, a malformed known control frame (wrong
 *     length, id 0 where forbidden, RST status 0, PING id 0 or flags,
 *     GOAWAY/WINDOW_UPDATE flags or length, bad SETTINGS count), DATA on
 *     stream 0, a frame above its limit, a session window overflow, an
 *     INITIAL_WINDOW_SIZE above 2^31-1, a header block that does not
 *     inflate, inflates beyond max_header_block, does not end exactly on a
 *     sync-flush boundary (a cut block: the shared zlib context could no
 *     longer follow the peer), or whose NV block needs more bytes than the
 *     block gave (see sl_spdy_nv_decode): GOAWAY(PROTOCOL_ERROR) is queued
 *     and recv returns a fatal error (sl_err_is_fatal()); the session is
 *     dead (spdystream also ends the session on these).
 *   - unknown control types (NOOP 5, CREDENTIAL 10, any other) are skipped
 *     by length, as the SPDY drafts say. spdystream would die on them.
 *   - SYN_STREAM with an id that is not new (<= the last one), of the
 *     wrong parity (even from a client, odd from a server): RST_STREAM
 *     (PROTOCOL_ERROR), frame ignored. A complete header block that is
 *     malformed (duplicate or empty names, trailing bytes, more than
 *     max_header_pairs): RST_STREAM(PROTOCOL_ERROR). Over max_streams
 *     concurrent peer streams, or after our GOAWAY:
 *     RST_STREAM(REFUSED_STREAM).
 *   - DATA or HEADERS on an unknown or closed stream: RST_STREAM
 *     (INVALID_STREAM), once per id; DATA after the peer's FIN:
 *     RST_STREAM(STREAM_ALREADY_CLOSED); DATA beyond our stream window
 *     from a flow-control peer: RST_STREAM(FLOW_CONTROL_ERROR); HEADERS
 *     after the peer's FIN: RST_STREAM(STREAM_ALREADY_CLOSED). DATA, HEADERS or
 *     SYN_REPLY still in flight on a stream we reset are dropped silently
 *     (the last SL_SPDY_RESET_MEMORY ids we reset are remembered).
 *   - SYN_REPLY for an unknown stream: RST(INVALID_STREAM); for a stream we
 *     did not open: RST(PROTOCOL_ERROR); a second one: RST(STREAM_IN_USE).
 *   - a stream WINDOW_UPDATE overflowing 2^31-1: RST(FLOW_CONTROL_ERROR).
 *   - RST_STREAM / WINDOW_UPDATE for unknown streams, WINDOW_UPDATE with
 *     delta 0: ignored.
 *   A stream the session resets because of the peer is reported with
 *   on_reset (the status sent) and then on_stream_close.
 *
 * Callbacks fire only from inside sl_spdy_session_recv / _flush and the
 * stream functions (on_stream_close); they may call any function here
 * except sl_spdy_session_recv and sl_spdy_session_free. Pointers given to
 * callbacks are valid only during the call.
 */
#ifndef SL_SPDY_SESSION_H
#define SL_SPDY_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/bufq.h"
#include "spdy/spdy_frame.h"
#include "spdy/spdy_zlib.h"

/* Largest DATA payload we send in one frame: client-go's io.Copy buffer
 * (spdystream writes one frame per Write()). Also the round-robin quantum. */
#define SL_SPDY_MAX_DATA_FRAME 32768u
/* SPDY/3 default window, for both directions (ours until we announce
 * another with sl_spdy_session_announce_window). */
#define SL_SPDY_INITIAL_WINDOW 65536
/* Session credit is returned once this many bytes have accumulated while
 * the session window is SPDY's 64 KiB; stream credit, and session credit
 * after we announced a larger window, once half our stream window has. */
#define SL_SPDY_WINDOW_UPDATE_THRESHOLD 32768u
/* How many ids of streams we reset are remembered to drop late DATA. */
#define SL_SPDY_RESET_MEMORY 64

/* Default limits (sl_spdy_limits). */
#define SL_SPDY_DEFAULT_MAX_DATA_PAYLOAD 0xFFFFFFu /* 16 MiB - 1: spdystream's maximum */
#define SL_SPDY_DEFAULT_MAX_CONTROL_PAYLOAD 65536u /* SYN/HEADERS with their header block */
#define SL_SPDY_DEFAULT_MAX_HEADER_BLOCK 65536u    /* decompressed */
#define SL_SPDY_DEFAULT_MAX_HEADER_PAIRS 64u
#define SL_SPDY_DEFAULT_MAX_STREAMS 1024u /* concurrent streams opened by the peer */

typedef struct sl_spdy_limits {
    uint32_t max_data_payload;    /* DATA frames above: fatal */
    uint32_t max_control_payload; /* known control frames above: fatal */
    size_t max_header_block;      /* decompressed header block above: fatal */
    size_t max_header_pairs;      /* more pairs in a block: RST_STREAM */
    size_t max_streams;           /* more concurrent peer streams: RST(REFUSED) */
    uint32_t initial_window;      /* our stream window before any announce */
} sl_spdy_limits;

/* Fills *l with the SL_SPDY_DEFAULT_* values. */
void sl_spdy_limits_default(sl_spdy_limits *l);

typedef enum sl_spdy_role {
    SL_SPDY_CLIENT = 0, /* opens odd stream ids, sends odd PING ids */
    SL_SPDY_SERVER = 1, /* accepts odd stream ids from the client, even PING ids */
} sl_spdy_role;

/* Every callback may be NULL except as noted. */
typedef struct sl_spdy_callbacks {
    /* The peer opened stream id (SYN_STREAM). fin: the peer sends nothing
     * more (no on_fin follows). unidirectional: we may send nothing (no
     * reply needed). Decide now or later: sl_spdy_stream_reply() to accept,
     * sl_spdy_stream_reset(.., SL_SPDY_CANCEL) to refuse. NULL: every
     * stream is refused with RST_STREAM(REFUSED_STREAM). */
    void (*on_stream_open)(void *arg, uint32_t id, const sl_spdy_nv *nv, size_t n, bool fin,
                           bool unidirectional);
    /* SYN_REPLY for a stream we opened; queued data starts to flow. */
    void (*on_reply)(void *arg, uint32_t id, const sl_spdy_nv *nv, size_t n);
    /* HEADERS on an open stream. */
    void (*on_headers)(void *arg, uint32_t id, const sl_spdy_nv *nv, size_t n);
    /* Payload bytes of stream id, in order; count them as unconsumed until
     * sl_spdy_stream_consumed(). DATA that arrives before the stream's
     * SYN_REPLY is delivered too (spdystream would drop it). */
    void (*on_data)(void *arg, uint32_t id, const uint8_t *data, size_t len);
    /* The peer half-closed stream id: no more on_data for it. */
    void (*on_fin)(void *arg, uint32_t id);
    /* Stream id was reset, by the peer (its status) or by this session for
     * a peer error (the status we sent). It is gone; on_stream_close follows. */
    void (*on_reset)(void *arg, uint32_t id, uint32_t status);
    /* The session forgets stream id: both sides closed, or reset either
     * way, or the peer's GOAWAY excluded it. Fires once per stream, also
     * from inside sl_spdy_stream_reset / _reply / _flush. */
    void (*on_stream_close)(void *arg, uint32_t id);
    /* The peer sent GOAWAY. Our streams above last_id were not processed
     * by it: each gets on_reset(REFUSED_STREAM) first. Streams up to
     * last_id go on. No new streams can be opened. */
    void (*on_goaway)(void *arg, uint32_t last_id, uint32_t status);
    /* A PING with our parity came back (answer to sl_spdy_ping). PINGs of
     * the other parity are echoed inside, without a callback. */
    void (*on_pong)(void *arg, uint32_t ping_id);
} sl_spdy_callbacks;

typedef struct sl_spdy_session sl_spdy_session;

/* Creates a session. cb is copied; arg is passed to every callback; out
 * receives every byte to write and must outlive the session; limits may be
 * NULL (defaults), zero fields mean the default. Nothing is written at
 * start (spdystream sends no SETTINGS either; a client that wants flow
 * control calls sl_spdy_session_announce_window next). Returns NULL on
 * ENOMEM. */
sl_spdy_session *sl_spdy_session_new(sl_spdy_role role, const sl_spdy_callbacks *cb, void *arg,
                                     sl_bufq *out, const sl_spdy_limits *limits);
/* Frees the session and every stream, with no callbacks and nothing
 * written. Not from inside a callback. */
void sl_spdy_session_free(sl_spdy_session *s);

/* Feeds len received bytes. Returns SL_OK, or a negative sl_err: fatal
 * peer errors (GOAWAY already queued, see above), SL_ERR_NOMEM. After an
 * error every call returns the same error: flush `out`, then close. */
int sl_spdy_session_recv(sl_spdy_session *s, const uint8_t *data, size_t len);

/* Moves queued stream data (and FINs) into out, one frame per stream per
 * turn, round-robin, while sl_bufq_len(out) < high_water and some stream
 * is sendable (peer windows permitting, when enforced). A stream we opened
 * sends nothing before its SYN_REPLY (spdystream drops such DATA). May fire
 * on_stream_close for streams whose FIN completes them. Returns SL_OK or
 * SL_ERR_NOMEM (nothing half-written). */
int sl_spdy_session_flush(sl_spdy_session *s, size_t high_water);
/* True when flush would move something (ignoring the high-water mark). */
bool sl_spdy_session_want_write(const sl_spdy_session *s);
/* False once the session is dead (fatal error). */
bool sl_spdy_session_want_read(const sl_spdy_session *s);

/* Opens a stream (SYN_STREAM, written to out at once; priority 0, no
 * associated stream). Ids are odd from 1 for a client, even from 2 for a
 * server. fin: we will send no data. Returns SL_OK and *id, SL_ERR_INVAL
 * (bad headers), SL_ERR_TOO_LARGE, SL_ERR_CLOSED (after a GOAWAY either
 * way), SL_ERR_FULL (ids exhausted or the peer's MAX_CONCURRENT_STREAMS
 * reached), SL_ERR_NOMEM, or the session's fatal error. */
int sl_spdy_stream_open(sl_spdy_session *s, const sl_spdy_nv *nv, size_t n, bool fin, uint32_t *id);
/* Accepts a peer's stream with SYN_REPLY (headers may be empty: n = 0, as
 * Kubernetes sends). fin: we will send no data. Returns SL_OK,
 * SL_ERR_NOTFOUND, SL_ERR_STATE (our own stream, or already replied),
 * SL_ERR_INVAL / SL_ERR_TOO_LARGE (bad headers), SL_ERR_NOMEM. */
int sl_spdy_stream_reply(sl_spdy_session *s, uint32_t id, const sl_spdy_nv *nv, size_t n, bool fin);
/* Resets stream id with status (!= 0; SL_SPDY_CANCEL to refuse or abort):
 * RST_STREAM goes to out at once, data still queued for the stream is
 * dropped, on_stream_close fires. To deliver queued data first, wait for
 * sl_spdy_stream_pending() == 0. Returns SL_OK, SL_ERR_NOTFOUND,
 * SL_ERR_INVAL, SL_ERR_NOMEM. */
int sl_spdy_stream_reset(sl_spdy_session *s, uint32_t id, uint32_t status);
/* Queues len bytes (copied) on stream id, to leave in DATA frames of at
 * most SL_SPDY_MAX_DATA_FRAME; fin then queues a FIN after them (as its
 * own empty DATA frame, like spdystream's Close()). The queue is unbounded:
 * watch sl_spdy_stream_pending(). Returns SL_OK, SL_ERR_NOTFOUND,
 * SL_ERR_STATE (FIN already queued, our side unidirectional-closed, or a
 * peer's stream not yet replied to), SL_ERR_NOMEM. */
int sl_spdy_stream_send(sl_spdy_session *s, uint32_t id, const uint8_t *data, size_t len, bool fin);
/* Half-closes our side: FIN (empty DATA frame with FLAG_FIN) after the
 * queued data. Same returns as sl_spdy_stream_send. */
int sl_spdy_stream_close(sl_spdy_session *s, uint32_t id);
/* Bytes queued on stream id and not yet moved to out (0 if unknown). */
size_t sl_spdy_stream_pending(const sl_spdy_session *s, uint32_t id);
/* The application has used n more bytes received on stream id. Stream
 * credit is returned (WINDOW_UPDATE for the stream) only to a peer that
 * uses flow control or after we announced, in steps of half our stream
 * window; the session window was credited when the bytes arrived. Returns SL_OK,
 * SL_ERR_NOTFOUND (the stream is gone), SL_ERR_INVAL (more than was
 * received and not yet consumed), SL_ERR_NOMEM. */
int sl_spdy_stream_consumed(sl_spdy_session *s, uint32_t id, size_t n);

/* Announces that we use flow control: sends SETTINGS INITIAL_WINDOW_SIZE =
 * initial_window (once), makes our stream receive windows that size
 * (existing streams too), widens the session window (SPDY/3.1's 64 KiB) to
 * the same size with a WINDOW_UPDATE for stream 0 (it costs no memory:
 * session credit goes back on arrival, the stream windows bound what we
 * hold), and from then on returns credit with
 * WINDOW_UPDATE as the application calls sl_spdy_stream_consumed(),
 * whether or not the peer uses flow control; credit held back until now
 * goes out at once. Meant for our own client, right after
 * sl_spdy_session_new (before opening streams): our server then enforces
 * this window per stream, and answers with its own SETTINGS, so back-
 * pressure works per stream both ways without head-of-line blocking.
 * Harmless towards Go peers: spdystream parses and ignores both SETTINGS and
 * WINDOW_UPDATE (and, sending neither, is never held to our windows: see
 * Back-pressure above). The Kubernetes server side (our server) does not
 * call it and keeps not sending SETTINGS unless the peer did: a session
 * that has not announced answers the peer's INITIAL_WINDOW_SIZE with its
 * own (64 KiB), once. Returns SL_OK, SL_ERR_INVAL (0 or above 2^31-1),
 * SL_ERR_STATE (already announced, or answered), SL_ERR_NOMEM, or the
 * session's fatal error. */
int sl_spdy_session_announce_window(sl_spdy_session *s, uint32_t initial_window);

/* Lets sl_spdy_stream_send() write DATA frames straight into out (one copy
 * instead of two) while out holds fewer than `limit` bytes, the stream has
 * nothing queued and the windows allow; the rest is queued as usual.
 * 0 (the default) turns it off. A server sets its output high-water mark. */
void sl_spdy_session_set_direct_limit(sl_spdy_session *s, size_t limit);

/* Sends a PING (client: odd ids from 1; server: even ids from 2); *id may
 * be NULL. The answer comes as on_pong. Returns SL_OK, SL_ERR_NOMEM or the
 * session's fatal error. */
int sl_spdy_ping(sl_spdy_session *s, uint32_t *id);
/* Sends GOAWAY(last good stream id, status) as spdystream computes it: the
 * last stream id received from the peer (0 if none). Later peer streams
 * are refused. Returns SL_OK, SL_ERR_STATE (already sent), SL_ERR_NOMEM. */
int sl_spdy_goaway(sl_spdy_session *s, uint32_t status);
/* The id a GOAWAY sent now would carry. */
uint32_t sl_spdy_session_last_good_id(const sl_spdy_session *s);
/* Streams currently known to the session. */
size_t sl_spdy_session_num_streams(const sl_spdy_session *s);
/* How many times the peer widened a send window (WINDOW_UPDATE, a larger
 * INITIAL_WINDOW_SIZE): compared before and after recv, it says whether
 * data held back by a window may leave now. */
uint64_t sl_spdy_session_grants(const sl_spdy_session *s);
/* True once the peer has shown it uses (stream) flow control. */
bool sl_spdy_session_peer_flow_control(const sl_spdy_session *s);

#endif
