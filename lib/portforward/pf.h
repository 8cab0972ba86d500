/* One forwarded connection, independent of the transport: asks the
 * runtime for a socket to port P of the sandbox, then moves bytes both
 * ways with back-pressure. The transport glue (SPDY stream pair, legacy
 * WebSocket channel pair) feeds client bytes in and carries bytes out. */
#ifndef SL_PF_H
#define SL_PF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>
#include "sluice/runtime.h"

/* Bytes read from the pod's socket at once. */
#define SL_PF_READ_CHUNK (64u * 1024)

typedef struct sl_pf_transport {
    /* Bytes from the pod for the client. Returns SL_OK or a negative sl_err. */
    int (*send)(void *t, const uint8_t *data, size_t len);
    /* True while output for this connection is above its high-water mark. */
    bool (*congested)(void *t);
    /* Pause (true) or resume client input for this connection. */
    void (*pause_input)(void *t, bool pause);
    /* The pod closed its side: no more send() calls. */
    void (*eof)(void *t);
    /* Finished: err is NULL after a clean end in both directions, else the
     * text for the client's error stream. No transport call follows. */
    void (*done)(void *t, const char *err);
} sl_pf_transport;

typedef struct sl_pf sl_pf;

/* Creates a connection; high_water bounds the client bytes queued for the
 * pod before input pauses. NULL on ENOMEM. */
sl_pf *sl_pf_new(uv_loop_t *loop, const sl_runtime *rt, const char *sandbox_id, uint16_t port,
                 const sl_pf_transport *t, void *targ, size_t high_water);
/* Asks the runtime to connect; transport callbacks (even done) may fire
 * before this returns. */
void sl_pf_start(sl_pf *pf);
/* Client bytes for the pod (queued until connected). */
void sl_pf_input(sl_pf *pf, const uint8_t *data, size_t len);
/* The client closed its sending side: the pod's socket gets SHUT_WR after
 * the queued bytes. */
void sl_pf_input_eof(sl_pf *pf);
/* The transport's output went below its high-water mark. */
void sl_pf_drained(sl_pf *pf);
/* The transport is gone: close everything; no transport call after this. */
void sl_pf_close(sl_pf *pf);

#endif
