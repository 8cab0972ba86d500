#include "server/spdy_pipe.h"

#include "sluice/error.h"
#include "sluice/server.h"

_Static_assert(SL_DEFAULT_SPDY_INITIAL_WINDOW == SL_SPDY_INITIAL_WINDOW &&
                   SL_DEFAULT_SPDY_MAX_STREAMS == SL_SPDY_DEFAULT_MAX_STREAMS &&
                   SL_DEFAULT_SPDY_MAX_HEADER_BLOCK == SL_SPDY_DEFAULT_MAX_HEADER_BLOCK &&
                   SL_DEFAULT_SPDY_MAX_HEADER_PAIRS == SL_SPDY_DEFAULT_MAX_HEADER_PAIRS &&
                   SL_DEFAULT_SPDY_MAX_CONTROL_FRAME == SL_SPDY_DEFAULT_MAX_CONTROL_PAYLOAD &&
                   SL_DEFAULT_SPDY_MAX_DATA_FRAME == SL_SPDY_DEFAULT_MAX_DATA_PAYLOAD,
               "the public SPDY defaults are the session's");

/* The connection's SPDY limits (sl_server_config). */
static void spdy_limits(const sl_server_config *cfg, sl_spdy_limits *l)
{
    sl_spdy_limits_default(l);
    l->max_data_payload = cfg->spdy_max_data_frame;
    l->max_control_payload = cfg->spdy_max_control_frame;
    l->max_header_block = cfg->spdy_max_header_block;
    l->max_header_pairs = cfg->spdy_max_header_pairs;
    l->max_streams = cfg->spdy_max_streams;
    l->initial_window = cfg->spdy_initial_window;
}

/* Largest WebSocket message a tunnel writes at once. */
#define TUNNEL_MSG_MAX (64u * 1024)

int sl_spdy_pipe_init(sl_spdy_pipe *p, sl_conn *c, sl_ws_conn *ws, const sl_spdy_callbacks *cb,
                      void *arg, size_t high_water)
{
    p->c = c;
    p->ws = ws;
    p->high_water = high_water;
    p->dead = false;
    sl_bufq_init(&p->tbuf);
    sl_spdy_limits lim;
    spdy_limits(sl_conn_cfg(c), &lim);
    p->s = sl_spdy_session_new(SL_SPDY_SERVER, cb, arg, ws ? &p->tbuf : sl_conn_out(c), &lim);
    if (!p->s)
        return SL_ERR_NOMEM;
    /* Direct sends measure the session's own output queue: for a tunnel
     * that is tbuf, emptied into WebSocket messages at every pump, so it
     * would never look full and the connection's queue would grow without
     * bound. Tunnelled data waits in its stream until pump finds room. */
    sl_spdy_session_set_direct_limit(p->s, ws ? 0 : high_water);
    return SL_OK;
}

void sl_spdy_pipe_fini(sl_spdy_pipe *p)
{
    sl_spdy_session_free(p->s);
    p->s = NULL;
    sl_bufq_fini(&p->tbuf);
}

static void tunnel_out(sl_spdy_pipe *p)
{
    uint8_t msg[TUNNEL_MSG_MAX];
    while (sl_bufq_len(&p->tbuf) > 0) {
        size_t n = sl_bufq_copyout(&p->tbuf, msg, sizeof(msg));
        if (sl_ws_conn_send_msg(p->ws, WSLAY_BINARY_FRAME, msg, n) < 0)
            break;
        sl_bufq_consume(&p->tbuf, n);
    }
    sl_ws_conn_flush(p->ws);
}

bool sl_spdy_pipe_congested(const sl_spdy_pipe *p)
{
    if (p->ws && sl_bufq_len(&p->tbuf) + sl_ws_conn_queued(p->ws) >= p->high_water)
        return true;
    return sl_conn_congested(p->c);
}

void sl_spdy_pipe_pump(sl_spdy_pipe *p)
{
    /* The session fills its output up to the mark; for a tunnel that output
     * is moved into messages right away, so measure the connection. */
    size_t room = sl_bufq_len(sl_conn_out(p->c)) < p->high_water
                      ? p->high_water - sl_bufq_len(sl_conn_out(p->c))
                      : 0;
    if (room > 0) {
        if (p->ws)
            sl_spdy_session_flush(p->s, room);
        else
            sl_spdy_session_flush(p->s, p->high_water);
    }
    if (p->ws)
        tunnel_out(p);
    sl_conn_flush(p->c);
    if (p->dead)
        sl_conn_finish(p->c);
}

void sl_spdy_pipe_recv(sl_spdy_pipe *p, const uint8_t *data, size_t len)
{
    if (p->dead)
        return;
    if (sl_spdy_session_recv(p->s, data, len) < 0)
        p->dead = true; /* GOAWAY is queued; it leaves with the rest */
    sl_spdy_pipe_pump(p);
}
