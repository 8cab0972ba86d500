/* The client's TCP connection: resolve, connect, send the upgrade
 * request, read and check the answer, then carry the upgraded protocol's
 * bytes. The only client layer that touches the socket. */
#ifndef SL_CLIENT_CCONN_H
#define SL_CLIENT_CCONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "client/upgrade.h"
#include "util/bufq.h"

/* After our last byte, wait this long for the server's EOF before
 * closing, so unread input never turns into a RST that destroys it. */
#define SL_CCONN_LINGER_MS 2000u
/* A finishing connection whose last bytes the server has not taken within
 * this is closed: a server that stopped reading (its pod does not read an
 * upload) must not keep the client alive for minutes. */
#define SL_CCONN_FINISH_TIMEOUT_MS 2000u

typedef struct sl_cconn sl_cconn;

typedef struct sl_cconn_callbacks {
    /* The 101 passed the checks; leftover bytes of the new protocol follow
     * as on_data. protocol is an entry of the sl_upgrade's offers. */
    void (*on_upgraded)(void *arg, const char *protocol);
    /* Bytes of the upgraded protocol. */
    void (*on_data)(void *arg, const uint8_t *data, size_t len);
    /* Some queued bytes were written. */
    void (*on_drained)(void *arg);
    /* The server closed the upgraded connection (or it failed). */
    void (*on_eof)(void *arg);
    /* Before the upgrade: connect failure, refusal, timeout. Nothing follows. */
    void (*on_error)(void *arg, sl_client_err_kind kind, int http_status, const char *msg);
} sl_cconn_callbacks;

/* Starts connecting to url and upgrading with up (copied). All
 * callbacks fire from loop callbacks, never from inside this call.
 * Returns SL_OK or SL_ERR_NOMEM. */
int sl_cconn_new(uv_loop_t *loop, const char *url, const sl_upgrade *up,
                 const sl_client_header *headers, size_t nheaders, uint32_t timeout_ms,
                 const sl_cconn_callbacks *cb, void *arg, sl_cconn **out);
/* Moves every byte of q (emptied) to the write queue and starts writing. */
void sl_cconn_send(sl_cconn *c, sl_bufq *q);
/* Bytes queued and not yet written. */
size_t sl_cconn_queued(const sl_cconn *c);
/* Pauses or resumes reading the socket. */
void sl_cconn_pause(sl_cconn *c, bool pause);
/* True while reading is paused. */
bool sl_cconn_paused(const sl_cconn *c);
/* Writes what is queued (for at most SL_CCONN_FINISH_TIMEOUT_MS),
 * half-closes, lingers for the server's EOF, then closes and frees itself.
 * No callback follows; forget the pointer. */
void sl_cconn_finish(sl_cconn *c);
/* Closes at once and frees itself. No callback follows. */
void sl_cconn_abort(sl_cconn *c);

#endif
