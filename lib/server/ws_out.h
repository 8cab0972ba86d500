/* Sending Kubernetes channel messages on a WebSocket connection, shared by
 * the remote-command and port-forward glue. */
#ifndef SL_WS_OUT_H
#define SL_WS_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ws/ws_conn.h"

typedef struct sl_ws_out {
    sl_ws_conn *ws;
    bool base64; /* text frames with base64 payloads */
    uint8_t *enc;
    size_t cap;
} sl_ws_out;

/* Queues data as one message on channel ch. Returns SL_OK or a negative
 * sl_err (SL_ERR_CLOSED after a close, SL_ERR_NOMEM). */
int sl_ws_out_send(sl_ws_out *o, uint8_t ch, const uint8_t *data, size_t len);
void sl_ws_out_fini(sl_ws_out *o);

#endif
