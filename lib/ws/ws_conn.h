/* An I/O-free WebSocket connection on top of wslay's event API, server
 * or client role. Binary messages are parsed, unmasked and reassembled
 * here, not in wslay; text messages and control frames go through wslay.
 *
 * Inbound: sl_ws_conn_recv() feeds socket bytes; complete (reassembled)
 * messages are delivered to on_msg. Pings are answered with pongs, frames
 * masked the wrong way (a server needs masked frames, a client unmasked
 * ones) are refused with close 1002, messages longer than max_message
 * with close 1009, a peer's close is echoed.
 * Outbound: sl_ws_conn_send_msg() queues a message; every byte to write
 * appears in the sl_bufq passed at init, whenever sl_ws_conn_flush() runs.
 * A client masks every frame with a fresh key from the kernel's CSPRNG
 * (getrandom(); RFC 6455 §5.3: keys from a strong source of entropy).
 */
#ifndef SL_WS_CONN_H
#define SL_WS_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <wslay/wslay.h>
#include "util/bufq.h"

typedef struct sl_ws_conn sl_ws_conn;

typedef struct sl_ws_callbacks {
    /* A complete data message; data is valid only during the call.
     * is_text: opcode was text (1) rather than binary (2). */
    void (*on_msg)(void *arg, int is_text, uint8_t *data, size_t len);
    /* The peer sent close (code, or 1005 when none) or violated the protocol
     * (code 1002/1009/1007); the close frame answering it is queued. */
    void (*on_close)(void *arg, uint16_t code);
} sl_ws_callbacks;

/* Creates a server-side connection. out receives every byte to send and
 * must outlive the connection. Returns NULL on ENOMEM. */
sl_ws_conn *sl_ws_conn_new(const sl_ws_callbacks *cb, void *arg, sl_bufq *out, size_t max_message);
/* The same for the client role (after our own upgrade request). Returns
 * NULL on ENOMEM or when getrandom() fails. */
sl_ws_conn *sl_ws_conn_new_client(const sl_ws_callbacks *cb, void *arg, sl_bufq *out,
                                  size_t max_message);
void sl_ws_conn_free(sl_ws_conn *ws);
/* Calls fn for every pong received (answers to sl_ws_conn_ping). */
void sl_ws_conn_set_on_pong(sl_ws_conn *ws, void (*fn)(void *arg));

/* Feeds len received bytes (any split). Returns SL_OK, or a negative
 * sl_err when the connection is unusable (then close the socket after
 * flushing). Callbacks fire from inside this call. */
int sl_ws_conn_recv(sl_ws_conn *ws, const uint8_t *data, size_t len);

/* Queues one message (opcode WSLAY_BINARY_FRAME or WSLAY_TEXT_FRAME);
 * data is copied. Returns SL_OK, SL_ERR_CLOSED after a close, SL_ERR_NOMEM. */
int sl_ws_conn_send_msg(sl_ws_conn *ws, int opcode, const uint8_t *data, size_t len);
/* Binary data: sends one message of `prefix` followed by data, framed
 * straight into out (one copy; in the client role masked on the way with a
 * fresh key from the kernel's CSPRNG). Returns SL_ERR_WOULDBLOCK when that
 * is not possible now (wslay holds queued frames, close sent or failed, no
 * random bytes): use sl_ws_conn_send_msg then. Else SL_OK or SL_ERR_NOMEM. */
int sl_ws_conn_send_prefixed(sl_ws_conn *ws, int opcode, uint8_t prefix, const uint8_t *data,
                             size_t len);
/* Queues a ping with an empty payload. Returns SL_OK, SL_ERR_CLOSED after
 * a close, SL_ERR_NOMEM. */
int sl_ws_conn_ping(sl_ws_conn *ws);
/* Queues a close frame with code and reason; later sends fail. */
int sl_ws_conn_close(sl_ws_conn *ws, uint16_t code, const char *reason);
/* Serialises every queued frame into the out queue. Returns SL_OK or a
 * negative sl_err. */
int sl_ws_conn_flush(sl_ws_conn *ws);
/* True once a close frame was sent (after flush). */
int sl_ws_conn_close_sent(const sl_ws_conn *ws);
/* Bytes queued inside wslay, not yet in out. */
size_t sl_ws_conn_queued(const sl_ws_conn *ws);
/* True once the peer's close frame arrived. */
int sl_ws_conn_close_received(const sl_ws_conn *ws);

#endif
