/* Remote-command session (exec and attach), independent of the transport.
 *
 * The transport glue (WebSocket now, SPDY too) turns protocol messages
 * into sl_rc_input()/sl_rc_input_eof() calls and provides sl_rc_transport
 * for the way out. The session starts the process through the runtime,
 * pumps its endpoints with back-pressure in both directions, and writes
 * the status on the error channel after every output byte. */
#ifndef SL_RC_H
#define SL_RC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>
#include "sluice/server.h"
#include "sluice/runtime.h"

/* Channel numbers of the remote-command protocols. */
enum {
    SL_CH_STDIN = 0,
    SL_CH_STDOUT = 1,
    SL_CH_STDERR = 2,
    SL_CH_ERROR = 3,
    SL_CH_RESIZE = 4,
    SL_CH_CLOSE = 255, /* v5 WebSocket CLOSE signal */
};

typedef struct sl_rc_transport {
    /* Queues len bytes on output channel ch (stdout, stderr, error).
     * Returns SL_OK or a negative sl_err (the session then ends). */
    int (*send)(void *t, int ch, const uint8_t *data, size_t len);
    /* Output channel ch is finished (SPDY: FIN). May be a no-op. */
    void (*close_channel)(void *t, int ch);
    /* True while output queued for ch is above the high-water mark; the
     * session stops reading the process until sl_rc_output_drained(). */
    bool (*congested)(void *t, int ch);
    /* Pause (true) or resume (false) delivery of peer input for ch. */
    void (*pause_input)(void *t, int ch, bool pause);
    /* The status is queued: flush everything, close the session. */
    void (*done)(void *t);
    /* Give up now (idle timeout): close without a status. */
    void (*abort)(void *t, const char *why);
} sl_rc_transport;

typedef struct sl_rc_params {
    sl_stream_request *req;   /* exec or attach; the session takes ownership */
    int version;              /* 1..5 */
    bool json_status;         /* v4/v5 status format */
    uint64_t idle_timeout_ms; /* 0 = none; counts application data only */
    size_t stdin_high_water;  /* queued stdin bytes before input pauses */
    /* A tty session waits this long for the client's first terminal size
     * before it starts the process, so the process never sees a 0x0
     * terminal; 0 = start at once (protocols without a resize stream). */
    uint32_t tty_size_wait_ms;
} sl_rc_params;

typedef struct sl_rc sl_rc;

/* Creates a session; nothing runs until sl_rc_start(). NULL on ENOMEM
 * (the request is freed then). */
sl_rc *sl_rc_new(uv_loop_t *loop, const sl_runtime *rt, const sl_rc_params *p,
                 const sl_rc_transport *t, void *targ);
/* Asks the runtime to start the process: at once, or for a tty session
 * once the first terminal size arrived or tty_size_wait_ms passed. */
void sl_rc_start(sl_rc *rc);
/* Peer data for ch: stdin goes to the process, resize is decoded; other
 * channels are ignored (as the kubelet does). */
void sl_rc_input(sl_rc *rc, int ch, const uint8_t *data, size_t len);
/* Peer closed ch (v5 CLOSE, SPDY FIN): stdin EOF reaches the process
 * after every queued byte. */
void sl_rc_input_eof(sl_rc *rc, int ch);
/* The transport's output went below its high-water mark. */
void sl_rc_output_drained(sl_rc *rc);
/* The transport is going away: the process is cancelled if it still runs,
 * every handle closes and the session frees itself. No transport call is
 * made after this returns. */
void sl_rc_close(sl_rc *rc);

#endif
