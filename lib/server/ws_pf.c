/* Port-forward over the legacy WebSocket channel protocol (protocol notes
 * §8.1): for the i-th port of the PortForward request, data travels on
 * channel 2i and error text on 2i+1; each channel first carries the port
 * as 2 bytes little-endian. One connection per port; the WebSocket closes
 * (1000) once every connection is done. */
#include <stdlib.h>
#include <string.h>

#include "portforward/pf.h"
#include "server/server_impl.h"
#include "server/stream_req.h"
#include "server/ws_out.h"
#include "ws/ws_channel.h"

typedef struct ws_pf ws_pf;

typedef struct pf_slot {
    ws_pf *owner;
    sl_pf *pf;
    uint16_t port;
    uint8_t index;
    bool done;
} pf_slot;

struct ws_pf {
    sl_server *srv;
    sl_conn *c;
    sl_ws_conn *ws;
    sl_ws_out out;
    sl_stream_req *req;
    pf_slot *slots;
    size_t nslots, ndone;
};

/* ---- sl_pf_transport, one per slot ---- */

static int t_send(void *t, const uint8_t *data, size_t len)
{
    pf_slot *s = t;
    ws_pf *w = s->owner;
    if (w->out.ending)
        return SL_ERR_CLOSED;
    int rc = sl_ws_out_send(&w->out, (uint8_t)(2 * s->index), data, len);
    sl_ws_out_flush(&w->out);
    return rc;
}

static bool t_congested(void *t)
{
    pf_slot *s = t;
    return sl_conn_congested(s->owner->c);
}

static void t_pause(void *t, bool pause)
{
    pf_slot *s = t;
    sl_conn_pause_read(s->owner->c, pause);
}

static void t_done(void *t, const char *err);

/* A channel cannot be half-closed: the pod's EOF ends the connection, as
 * the kubelet's PortForward returning does. */
static void t_eof(void *t)
{
    t_done(t, NULL);
}

static void t_done(void *t, const char *err)
{
    pf_slot *s = t;
    ws_pf *w = s->owner;
    if (s->done)
        return;
    s->done = true;
    w->ndone++;
    if (err && !w->out.ending) {
        sl_ws_out_send(&w->out, (uint8_t)(2 * s->index + 1), (const uint8_t *)err, strlen(err));
        sl_ws_out_flush(&w->out);
    }
    if (w->ndone == w->nslots)
        sl_ws_out_end(&w->out, 1000, "");
}

static const sl_pf_transport pf_transport = {
    .send = t_send,
    .congested = t_congested,
    .pause_input = t_pause,
    .eof = t_eof,
    .done = t_done,
};

/* ---- WebSocket and connection events ---- */

static void on_msg(void *arg, int is_text, uint8_t *data, size_t len)
{
    ws_pf *w = arg;
    (void)is_text;
    uint8_t ch;
    uint8_t *payload;
    size_t plen;
    if (w->out.ending || sl_ws_channel_decode(data, len, w->out.base64, &ch, &payload, &plen) < 0)
        return;
    /* Only data channels carry client bytes; anything else is ignored. */
    if (ch % 2 != 0 || ch / 2 >= w->nslots || w->slots[ch / 2].done)
        return;
    sl_pf_input(w->slots[ch / 2].pf, payload, plen);
}

static void on_close(void *arg, uint16_t code)
{
    ws_pf *w = arg;
    (void)code;
    sl_ws_out_peer_closed(&w->out);
}

static const sl_ws_callbacks ws_callbacks = {.on_msg = on_msg, .on_close = on_close};

static void p_recv(void *s, const uint8_t *data, size_t len)
{
    ws_pf *w = s;
    sl_ws_out_recv(&w->out, data, len);
}

static void p_drained(void *s)
{
    ws_pf *w = s;
    for (size_t i = 0; i < w->nslots && !w->out.ending; i++)
        if (!w->slots[i].done)
            sl_pf_drained(w->slots[i].pf);
}

static void p_closed(void *s)
{
    ws_pf *w = s;
    for (size_t i = 0; i < w->nslots; i++)
        if (w->slots[i].pf)
            sl_pf_close(w->slots[i].pf);
    sl_ws_conn_free(w->ws);
    sl_ws_out_fini(&w->out);
    sl_stream_req_free(w->req);
    free(w->slots);
    free(w);
}

static void p_poke(void *s)
{
    ws_pf *w = s;
    sl_ws_out_poke(&w->out);
}

static const sl_conn_proto ws_pf_proto = {
    .recv = p_recv,
    .drained = p_drained,
    .closed = p_closed,
    .poke = p_poke,
};

static void send_port_prefixes(ws_pf *w)
{
    for (size_t i = 0; i < w->nslots; i++) {
        uint8_t le[2] = {(uint8_t)(w->slots[i].port & 0xff), (uint8_t)(w->slots[i].port >> 8)};
        sl_ws_out_send(&w->out, (uint8_t)(2 * i), le, 2);
        sl_ws_out_send(&w->out, (uint8_t)(2 * i + 1), le, 2);
    }
}

void sl_ws_pf_start(sl_server *srv, sl_conn *c, sl_stream_req *req, const char *proto,
                    const uint8_t *leftover, size_t len)
{
    ws_pf *w = calloc(1, sizeof(*w));
    size_t n = req->u.pf.nports;
    pf_slot *slots = calloc(n ? n : 1, sizeof(*slots));
    if (w)
        w->ws = sl_ws_conn_new(&ws_callbacks, w, sl_conn_out(c), sl_conn_cfg(c)->max_ws_message);
    if (!w || !slots || !w->ws) {
        if (w && w->ws)
            sl_ws_conn_free(w->ws);
        free(w);
        free(slots);
        sl_stream_req_free(req);
        sl_conn_abort(c);
        return;
    }
    w->srv = srv;
    w->c = c;
    w->req = req;
    w->slots = slots;
    w->nslots = n;
    w->out.c = c;
    w->out.ws = w->ws;
    w->out.base64 = strstr(proto, "base64") != NULL;
    for (size_t i = 0; i < n; i++) {
        slots[i].owner = w;
        slots[i].index = (uint8_t)i;
        slots[i].port = req->u.pf.ports[i];
        slots[i].pf = sl_pf_new(srv->loop, srv->rt, req->u.pf.pod_sandbox_id, slots[i].port,
                                &pf_transport, &slots[i], sl_conn_cfg(c)->output_high_water);
        if (!slots[i].pf) {
            slots[i].done = true;
            w->ndone++;
        }
    }
    sl_conn_flush(c); /* the 101 */
    send_port_prefixes(w);
    sl_ws_out_flush(&w->out);
    sl_conn_upgrade(c, &ws_pf_proto, w, leftover, len);
    for (size_t i = 0; i < n && !w->out.ending; i++)
        if (slots[i].pf)
            sl_pf_start(slots[i].pf);
}
