/* Channel messages and the end of a WebSocket, client side (see wsch.h). */
#include "client/wsch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/client.h"
#include "sluice/error.h"

int sl_wsch_send(sl_ws_conn *ws, uint8_t **enc, size_t *cap, uint8_t ch, const uint8_t *data,
                 size_t len)
{
    int rc = sl_ws_conn_send_prefixed(ws, WSLAY_BINARY_FRAME, ch, data, len);
    if (rc != SL_ERR_WOULDBLOCK)
        return rc == SL_OK ? sl_ws_conn_flush(ws) : rc;
    if (*cap < len + 1) {
        uint8_t *n = realloc(*enc, len + 1);
        if (!n)
            return SL_ERR_NOMEM;
        *enc = n;
        *cap = len + 1;
    }
    (*enc)[0] = ch;
    if (len)
        memcpy(*enc + 1, data, len);
    rc = sl_ws_conn_send_msg(ws, WSLAY_BINARY_FRAME, *enc, len + 1);
    return rc == SL_OK ? sl_ws_conn_flush(ws) : rc;
}

int sl_wsch_end(int rv, bool close_seen, uint16_t close_code, char msg[SL_WSCH_END_MSG_MAX])
{
    if (rv < 0) {
        snprintf(msg, SL_WSCH_END_MSG_MAX, "%s",
                 rv == SL_ERR_TOO_LARGE ? "WebSocket message from the server above the limit"
                                        : "WebSocket protocol error from the server");
        return SL_CLIENT_ERR_PROTOCOL;
    }
    if (!close_seen)
        return -1;
    if (close_code == SL_WSCH_CLOSE_NORMAL)
        return 0;
    snprintf(msg, SL_WSCH_END_MSG_MAX, "the server closed the connection with code %u", close_code);
    return SL_CLIENT_ERR_LOST;
}
