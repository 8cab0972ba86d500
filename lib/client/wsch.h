/* What the remote-command (crc) and port-forward (cpf) cores do alike on
 * a WebSocket: channel-prefixed binary messages out, and reading how the
 * server ended the connection. */
#ifndef SL_CLIENT_WSCH_H
#define SL_CLIENT_WSCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ws/ws_conn.h"

#define SL_WSCH_CLOSE_NORMAL 1000 /* the close code of a clean end */
#define SL_WSCH_END_MSG_MAX 96    /* room for sl_wsch_end()'s message */

/* Sends [ch][data] as one binary message and flushes it; *enc (capacity
 * *cap) is the caller's buffer, grown as needed. Returns SL_OK,
 * SL_ERR_NOMEM or what sl_ws_conn_send_msg/flush return. */
int sl_wsch_send(sl_ws_conn *ws, uint8_t **enc, size_t *cap, uint8_t ch, const uint8_t *data,
                 size_t len);

/* Reads sl_ws_conn_recv()'s result rv and the close seen so far: -1 the
 * session goes on; 0 the server closed cleanly; else the
 * sl_client_err_kind of the failure, with its text in msg. */
int sl_wsch_end(int rv, bool close_seen, uint16_t close_code, char msg[SL_WSCH_END_MSG_MAX]);

#endif
