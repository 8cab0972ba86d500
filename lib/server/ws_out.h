/* The WebSocket side of a server session, shared by the remote-command and
 * port-forward glue: channel messages out, bytes in, and the way the
 * session ends (close frame first, then the connection). */
#ifndef SL_WS_OUT_H
#define SL_WS_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "server/conn.h"
#include "ws/ws_conn.h"

typedef struct sl_ws_out {
    sl_conn *c;
    sl_ws_conn *ws;
    bool base64; /* text frames with base64 payloads */
    bool ending; /* a close frame is queued (ours or the answer to the peer's) */
    uint8_t *enc;
    size_t cap;
} sl_ws_out;

/* Queues data as one message on channel ch. Returns SL_OK or a negative
 * sl_err (SL_ERR_CLOSED after a close, SL_ERR_NOMEM). */
int sl_ws_out_send(sl_ws_out *o, uint8_t ch, const uint8_t *data, size_t len);
void sl_ws_out_fini(sl_ws_out *o);

/* Moves wslay's queued frames to the connection and starts writing. */
void sl_ws_out_flush(sl_ws_out *o);
/* Once: queues a close frame, then finishes the connection after it. */
void sl_ws_out_end(sl_ws_out *o, uint16_t code, const char *reason);
/* The peer closed or broke the protocol (wslay queued the answer): write
 * it, then finish the connection. */
void sl_ws_out_peer_closed(sl_ws_out *o);
/* Bytes from the connection; a stream wslay cannot parse ends the session. */
void sl_ws_out_recv(sl_ws_out *o, const uint8_t *data, size_t len);
/* A ping, for sl_conn_proto.poke. */
void sl_ws_out_poke(sl_ws_out *o);

#endif
