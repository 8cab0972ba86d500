#include "server/ws_out.h"

#include <stdlib.h>

#include "server/conn.h"
#include "sluice/error.h"
#include "ws/ws_channel.h"

int sl_ws_out_send(sl_ws_out *o, uint8_t ch, const uint8_t *data, size_t len)
{
    static const uint8_t none[1];
    if (!o->base64) {
        int rc = sl_ws_conn_send_prefixed(o->ws, WSLAY_BINARY_FRAME, ch, data, len);
        if (rc != SL_ERR_WOULDBLOCK)
            return rc;
    }
    size_t need = sl_ws_channel_encoded_len(len, o->base64);
    if (need > o->cap) {
        uint8_t *p = realloc(o->enc, need);
        if (!p)
            return SL_ERR_NOMEM;
        o->enc = p;
        o->cap = need;
    }
    size_t n = sl_ws_channel_encode(o->enc, ch, len ? data : none, len, o->base64);
    return sl_ws_conn_send_msg(o->ws, o->base64 ? WSLAY_TEXT_FRAME : WSLAY_BINARY_FRAME, o->enc, n);
}

void sl_ws_out_fini(sl_ws_out *o)
{
    free(o->enc);
    o->enc = NULL;
    o->cap = 0;
}

void sl_ws_out_flush(sl_ws_out *o)
{
    sl_ws_conn_flush(o->ws);
    sl_conn_flush(o->c);
}

void sl_ws_out_peer_closed(sl_ws_out *o)
{
    o->ending = true;
    sl_conn_set_end_reason(o->c, "client_closed");
    /* the close frame first: finishing an empty queue shuts the socket */
    sl_ws_out_flush(o);
    sl_conn_finish(o->c);
}

void sl_ws_out_end(sl_ws_out *o, uint16_t code, const char *reason)
{
    if (o->ending)
        return;
    o->ending = true;
    /* 1000: the session is done; 1001: given up (idle timeout) */
    sl_conn_set_end_reason(o->c, code == 1000 ? "exit" : code == 1001 ? "idle_timeout" : "error");
    sl_ws_conn_close(o->ws, code, reason);
    sl_ws_out_peer_closed(o);
}

void sl_ws_out_recv(sl_ws_out *o, const uint8_t *data, size_t len)
{
    if (sl_ws_conn_recv(o->ws, data, len) < 0)
        sl_ws_out_peer_closed(o);
    else
        sl_ws_out_flush(o);
}

void sl_ws_out_poke(sl_ws_out *o)
{
    if (!o->ending && sl_ws_conn_ping(o->ws) == SL_OK)
        sl_ws_out_flush(o);
}
