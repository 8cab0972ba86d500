/* Remote command over WebSocket: binds a connection, a wslay session and
 * a remote-command session (protocol notes §6). */
#include <stdlib.h>
#include <string.h>

#include "remotecommand/rc.h"
#include "server/server_impl.h"
#include "server/stream_req.h"
#include "server/ws_out.h"
#include "ws/ws_channel.h"
#include "ws/ws_conn.h"

typedef struct ws_rc {
    sl_server *srv;
    sl_conn *c;
    sl_ws_conn *ws;
    sl_ws_out out;
    sl_rc *rc;
    int version;
    bool base64;
} ws_rc;

/* ---- sl_rc_transport ---- */

static int t_send(void *t, int ch, const uint8_t *data, size_t len)
{
    ws_rc *w = t;
    if (w->out.ending)
        return SL_ERR_CLOSED;
    int rc = sl_ws_out_send(&w->out, (uint8_t)ch, data, len);
    if (rc < 0)
        return rc;
    sl_ws_out_flush(&w->out);
    return SL_OK;
}

static void t_close_channel(void *t, int ch)
{
    (void)t; /* WebSocket has no per-channel end from the server side */
    (void)ch;
}

static bool t_congested(void *t, int ch)
{
    ws_rc *w = t;
    (void)ch;
    return sl_conn_congested(w->c);
}

static void t_pause_input(void *t, int ch, bool pause)
{
    ws_rc *w = t;
    (void)ch; /* one TCP stream carries every channel */
    sl_conn_pause_read(w->c, pause);
}

static void t_done(void *t)
{
    ws_rc *w = t;
    sl_ws_out_end(&w->out, 1000, "");
}

static void t_abort(void *t, const char *why)
{
    ws_rc *w = t;
    sl_ws_out_end(&w->out, 1001, why);
}

static const sl_rc_transport ws_transport = {
    .send = t_send,
    .close_channel = t_close_channel,
    .congested = t_congested,
    .pause_input = t_pause_input,
    .done = t_done,
    .abort = t_abort,
};

/* ---- WebSocket events ---- */

static void on_msg(void *arg, int is_text, uint8_t *data, size_t len)
{
    ws_rc *w = arg;
    (void)is_text; /* both are accepted, as the kubelet does */
    if (w->out.ending)
        return;
    uint8_t ch;
    uint8_t *payload;
    size_t plen;
    if (sl_ws_channel_decode(data, len, w->base64, &ch, &payload, &plen) < 0)
        return; /* empty or undecodable messages are ignored, as the kubelet does */
    if (ch == SL_CH_CLOSE && w->version >= 5) {
        /* A malformed CLOSE breaks the read loop of the Go server too. */
        if (plen != 1 || payload[0] > SL_CH_RESIZE) {
            sl_ws_out_end(&w->out, 1002, "malformed CLOSE message");
            return;
        }
        sl_rc_input_eof(w->rc, payload[0]);
        return;
    }
    sl_rc_input(w->rc, ch, payload, plen);
}

static void on_close(void *arg, uint16_t code)
{
    ws_rc *w = arg;
    (void)code;
    sl_ws_out_peer_closed(&w->out);
}

static const sl_ws_callbacks ws_callbacks = {.on_msg = on_msg, .on_close = on_close};

/* ---- connection events ---- */

static void p_recv(void *s, const uint8_t *data, size_t len)
{
    ws_rc *w = s;
    sl_ws_out_recv(&w->out, data, len);
}

static void p_drained(void *s)
{
    ws_rc *w = s;
    if (!w->out.ending)
        sl_rc_output_drained(w->rc);
}

static void p_closed(void *s)
{
    ws_rc *w = s;
    sl_rc_close(w->rc);
    sl_ws_conn_free(w->ws);
    sl_ws_out_fini(&w->out);
    free(w);
}

static void p_poke(void *s)
{
    ws_rc *w = s;
    sl_ws_out_poke(&w->out);
}

static const sl_conn_proto ws_rc_proto = {
    .recv = p_recv,
    .drained = p_drained,
    .closed = p_closed,
    .poke = p_poke,
};

static void parse_protocol(ws_rc *w, const char *proto)
{
    w->base64 = strstr(proto, "base64") != NULL;
    if (!strncmp(proto, "v5.", 3))
        w->version = 5;
    else if (!strncmp(proto, "v4.", 3))
        w->version = 4;
    else
        w->version = 1;
}

/* The empty "connected" message goes on the lowest writable channel. */
static int first_channel(const sl_stream_req *req)
{
    bool out, err, tty;
    if (req->kind == SL_TOKEN_EXEC)
        out = req->u.exec.out, err = req->u.exec.err, tty = req->u.exec.tty;
    else
        out = req->u.attach.out, err = req->u.attach.err, tty = req->u.attach.tty;
    if (out)
        return SL_CH_STDOUT;
    if (err && !tty)
        return SL_CH_STDERR;
    return SL_CH_ERROR;
}

void sl_ws_rc_start(sl_server *srv, sl_conn *c, sl_stream_req *req, const char *proto,
                    const uint8_t *leftover, size_t len)
{
    ws_rc *w = calloc(1, sizeof(*w));
    if (!w) {
        sl_stream_req_free(req);
        sl_conn_abort(c);
        return;
    }
    w->srv = srv;
    w->c = c;
    parse_protocol(w, proto);
    int first = first_channel(req);
    sl_rc_params p = {
        .req = req,
        .version = w->version,
        .json_status = w->version >= 4,
        .idle_timeout_ms = sl_conn_cfg(c)->idle_timeout_ms,
        .stdin_high_water = sl_conn_cfg(c)->output_high_water,
        .tty_size_wait_ms =
            sl_conn_cfg(c)->tty_size_wait_ms, /* every version has a resize channel */
    };
    w->ws = sl_ws_conn_new(&ws_callbacks, w, sl_conn_out(c), sl_conn_cfg(c)->max_ws_message);
    w->rc = w->ws ? sl_rc_new(srv->loop, srv->rt, &p, &ws_transport, w) : NULL;
    if (!w->rc) {
        if (w->ws)
            sl_ws_conn_free(w->ws);
        else
            sl_stream_req_free(req);
        free(w);
        sl_conn_abort(c);
        return;
    }
    w->out.c = c;
    w->out.ws = w->ws;
    w->out.base64 = w->base64;
    sl_conn_flush(c); /* the 101 */
    t_send(w, first, NULL, 0);
    sl_conn_upgrade(c, &ws_rc_proto, w, leftover, len);
    sl_rc_start(w->rc);
}
