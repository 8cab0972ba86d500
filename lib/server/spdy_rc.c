/* Remote command over SPDY/3.1 (protocol notes §5): the client creates
 * one stream per channel (streamtype header), we reply to each, and the
 * process starts once every expected stream exists. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "remotecommand/rc.h"
#include "remotecommand/rc_status.h"
#include "server/server_impl.h"
#include "server/spdy_pipe.h"
#include "server/stream_req.h"

#define NCH 5 /* stdin, stdout, stderr, error, resize */

typedef struct spdy_rc {
    sl_server *srv;
    sl_conn *c;
    sl_spdy_pipe pipe;
    sl_rc *rc;
    int version;
    bool tty, in, out, err, attach;
    uint32_t sid[NCH]; /* stream id per channel, 0 = none */
    bool fin_sent[NCH];
    int expected, have;
    uv_timer_t timer; /* stream creation timeout */
    bool started, finishing, gone, stdin_paused;
    size_t unconsumed; /* stdin bytes held back from the window while paused */
} spdy_rc;

static const char *const type_names[NCH] = {"stdin", "stdout", "stderr", "error", "resize"};

static int channel_of(spdy_rc *x, uint32_t id)
{
    for (int ch = 0; ch < NCH; ch++)
        if (x->sid[ch] == id)
            return ch;
    return -1;
}

static void pump(spdy_rc *x)
{
    sl_spdy_pipe_pump(&x->pipe);
}

/* Ends the session the kubelet's way once our queued output has left:
 * reset every stream we did not finish, GOAWAY, close. */
static void try_finish(spdy_rc *x)
{
    if (!x->finishing || x->gone)
        return;
    for (int ch = 0; ch < NCH; ch++)
        if (x->sid[ch] && sl_spdy_stream_pending(x->pipe.s, x->sid[ch]) > 0)
            return;
    for (int ch = 0; ch < NCH; ch++)
        if (x->sid[ch] && !x->fin_sent[ch])
            sl_spdy_stream_reset(x->pipe.s, x->sid[ch], SL_SPDY_CANCEL);
    sl_spdy_goaway(x->pipe.s, SL_SPDY_GOAWAY_OK);
    x->gone = true;
    pump(x);
    sl_conn_finish(x->c);
}

/* ---- sl_rc_transport ---- */

static int t_send(void *t, int ch, const uint8_t *data, size_t len)
{
    spdy_rc *x = t;
    if (ch < 0 || ch >= NCH || !x->sid[ch] || x->fin_sent[ch] || x->gone)
        return SL_OK; /* the client did not ask for this channel or reset it */
    int rc = sl_spdy_stream_send(x->pipe.s, x->sid[ch], data, len, false);
    pump(x);
    return rc == SL_ERR_NOTFOUND ? SL_OK : rc;
}

static void t_close_channel(void *t, int ch)
{
    spdy_rc *x = t;
    if (ch < 0 || ch >= NCH || !x->sid[ch] || x->fin_sent[ch] || x->gone)
        return;
    x->fin_sent[ch] = true;
    sl_spdy_stream_close(x->pipe.s, x->sid[ch]);
    pump(x);
}

static bool t_congested(void *t, int ch)
{
    spdy_rc *x = t;
    if (ch < 0 || ch >= NCH || !x->sid[ch])
        return sl_spdy_pipe_congested(&x->pipe);
    return sl_spdy_stream_pending(x->pipe.s, x->sid[ch]) >= x->pipe.high_water / 2;
}

static void t_pause_input(void *t, int ch, bool pause)
{
    spdy_rc *x = t;
    (void)ch;
    x->stdin_paused = pause;
    if (sl_spdy_session_peer_flow_control(x->pipe.s)) {
        /* The window does it: credit comes back only when we resume. */
        if (!pause && x->unconsumed && x->sid[SL_CH_STDIN]) {
            sl_spdy_stream_consumed(x->pipe.s, x->sid[SL_CH_STDIN], x->unconsumed);
            x->unconsumed = 0;
            pump(x);
        }
        return;
    }
    /* spdystream has no flow control: only TCP can hold it back. stdin is
     * the one inbound bulk stream of a remote command, so this stalls
     * nothing that matters (resize waits a little). */
    sl_conn_pause_read(x->c, pause);
}

static void t_done(void *t)
{
    spdy_rc *x = t;
    x->finishing = true;
    try_finish(x);
}

static void t_abort(void *t, const char *why)
{
    spdy_rc *x = t;
    (void)why;
    sl_conn_set_end_reason(x->c, "idle_timeout");
    x->finishing = true;
    for (int ch = 0; ch < NCH; ch++)
        if (x->sid[ch])
            sl_spdy_stream_reset(x->pipe.s, x->sid[ch], SL_SPDY_CANCEL);
    try_finish(x);
}

static const sl_rc_transport spdy_transport = {
    .send = t_send,
    .close_channel = t_close_channel,
    .congested = t_congested,
    .pause_input = t_pause_input,
    .done = t_done,
    .abort = t_abort,
};

/* ---- stream setup ---- */

static void start(spdy_rc *x)
{
    x->started = true;
    uv_timer_stop(&x->timer);
    if (x->version == 1) {
        /* v1 quirk kept by the kubelet for 1.0 clients: stdin is half-closed
         * and the error stream reset right after setup. */
        if (x->sid[SL_CH_STDIN]) {
            x->fin_sent[SL_CH_STDIN] = true;
            sl_spdy_stream_close(x->pipe.s, x->sid[SL_CH_STDIN]);
        }
        if (x->sid[SL_CH_ERROR]) {
            sl_spdy_stream_reset(x->pipe.s, x->sid[SL_CH_ERROR], SL_SPDY_CANCEL);
            x->sid[SL_CH_ERROR] = 0;
        }
        pump(x);
    }
    sl_rc_start(x->rc);
}

static void on_stream_open(void *arg, uint32_t id, const sl_spdy_nv *nv, size_t n, bool fin,
                           bool uni)
{
    spdy_rc *x = arg;
    (void)uni;
    const sl_spdy_nv *t = sl_spdy_nv_find(nv, n, "streamtype");
    sl_spdy_stream_reply(x->pipe.s, id, NULL, 0, false);
    if (!t || x->started)
        return; /* unknown types are answered but not counted, as the kubelet does */
    for (int ch = 0; ch < NCH; ch++) {
        if (strlen(type_names[ch]) != t->value_len ||
            strncasecmp(type_names[ch], t->value, t->value_len))
            continue;
        x->sid[ch] = id;
        if (fin && ch == SL_CH_STDIN)
            sl_rc_input_eof(x->rc, SL_CH_STDIN);
        if (++x->have == x->expected)
            start(x);
        return;
    }
}

static void on_data(void *arg, uint32_t id, const uint8_t *data, size_t len)
{
    spdy_rc *x = arg;
    int ch = channel_of(x, id);
    if (ch == SL_CH_STDIN || ch == SL_CH_RESIZE)
        sl_rc_input(x->rc, ch, data, len);
    if (ch == SL_CH_STDIN && x->stdin_paused)
        x->unconsumed += len;
    else
        sl_spdy_stream_consumed(x->pipe.s, id, len);
}

static void on_fin(void *arg, uint32_t id)
{
    spdy_rc *x = arg;
    int ch = channel_of(x, id);
    if (ch >= 0)
        sl_rc_input_eof(x->rc, ch);
}

static void on_reset(void *arg, uint32_t id, uint32_t status)
{
    spdy_rc *x = arg;
    (void)status;
    int ch = channel_of(x, id);
    if (ch == SL_CH_STDIN)
        sl_rc_input_eof(x->rc, ch);
}

static void on_stream_close(void *arg, uint32_t id)
{
    spdy_rc *x = arg;
    int ch = channel_of(x, id);
    if (ch >= 0) {
        if (ch == SL_CH_STDIN)
            sl_rc_input_eof(x->rc, ch);
        x->sid[ch] = 0; /* later output for it is dropped */
    }
}

static void on_goaway(void *arg, uint32_t last_id, uint32_t status)
{
    spdy_rc *x = arg;
    (void)last_id;
    (void)status;
    if (!x->started) /* the client gave up before the streams were complete */
        sl_conn_finish(x->c);
}

static const sl_spdy_callbacks spdy_callbacks = {
    .on_stream_open = on_stream_open,
    .on_data = on_data,
    .on_fin = on_fin,
    .on_reset = on_reset,
    .on_stream_close = on_stream_close,
    .on_goaway = on_goaway,
};

/* The kubelet reports nothing here; we tell the client why on its error
 * stream when it created one, then end the session. */
static void creation_timeout_cb(uv_timer_t *t)
{
    spdy_rc *x = t->data;
    if (x->started || x->finishing)
        return;
    if (x->sid[SL_CH_ERROR]) {
        char *st;
        size_t len;
        if (sl_rc_status_format(x->version >= 4, x->attach, SL_RC_INTERNAL, 0,
                                "timed out waiting for client to create streams", &st, &len) == 0) {
            sl_spdy_stream_send(x->pipe.s, x->sid[SL_CH_ERROR], (const uint8_t *)st, len, true);
            x->fin_sent[SL_CH_ERROR] = true;
            free(st);
        }
    }
    x->finishing = true;
    pump(x);
    try_finish(x);
}

/* ---- connection events ---- */

static void p_recv(void *s, const uint8_t *data, size_t len)
{
    spdy_rc *x = s;
    uint64_t grants = sl_spdy_session_grants(x->pipe.s);
    sl_spdy_pipe_recv(&x->pipe, data, len);
    /* A WINDOW_UPDATE let queued output leave: read the process again. */
    if (sl_spdy_session_grants(x->pipe.s) != grants && x->started && !x->gone && !x->finishing)
        sl_rc_output_drained(x->rc);
    try_finish(x);
}

static void p_drained(void *s)
{
    spdy_rc *x = s;
    pump(x);
    if (x->started && !x->gone)
        sl_rc_output_drained(x->rc);
    try_finish(x);
}

static void timer_closed(uv_handle_t *h)
{
    spdy_rc *x = h->data;
    sl_spdy_pipe_fini(&x->pipe);
    free(x);
}

static void p_closed(void *s)
{
    spdy_rc *x = s;
    x->gone = true;
    sl_rc_close(x->rc);
    uv_close((uv_handle_t *)&x->timer, timer_closed);
}

static void p_poke(void *s)
{
    spdy_rc *x = s;
    if (!x->gone && sl_spdy_ping(x->pipe.s, NULL) == SL_OK)
        pump(x);
}

static const sl_conn_proto spdy_rc_proto = {
    .recv = p_recv,
    .drained = p_drained,
    .closed = p_closed,
    .poke = p_poke,
};

static int version_of(const char *proto)
{
    if (proto[0] == 'v' && proto[1] >= '2' && proto[1] <= '4')
        return proto[1] - '0';
    return 1;
}

void sl_spdy_rc_start(sl_server *srv, sl_conn *c, sl_stream_req *req, const char *proto,
                      const uint8_t *leftover, size_t len)
{
    spdy_rc *x = calloc(1, sizeof(*x));
    if (!x || sl_spdy_pipe_init(&x->pipe, c, NULL, &spdy_callbacks, x,
                                sl_conn_cfg(c)->output_high_water) < 0) {
        if (x)
            sl_spdy_pipe_fini(&x->pipe);
        free(x);
        sl_stream_req_free(req);
        sl_conn_abort(c);
        return;
    }
    x->srv = srv;
    x->c = c;
    x->version = version_of(proto);
    bool exec = req->kind == SL_TOKEN_EXEC;
    x->attach = !exec;
    x->tty = exec ? req->u.exec.tty : req->u.attach.tty;
    x->in = exec ? req->u.exec.in : req->u.attach.in;
    x->out = exec ? req->u.exec.out : req->u.attach.out;
    x->err = (exec ? req->u.exec.err : req->u.attach.err) && !x->tty;
    x->expected = 1 + x->in + x->out + x->err + (x->tty && x->version >= 3);
    sl_rc_params p = {
        .req = req,
        .version = x->version,
        .json_status = x->version >= 4,
        .idle_timeout_ms = sl_conn_cfg(c)->idle_timeout_ms,
        .stdin_high_water = sl_conn_cfg(c)->output_high_water,
        .tty_size_wait_ms =
            x->version >= 3 ? sl_conn_cfg(c)->tty_size_wait_ms : 0, /* v1, v2: no resize */
    };
    x->rc = sl_rc_new(srv->loop, srv->rt, &p, &spdy_transport, x);
    if (!x->rc) {
        sl_spdy_pipe_fini(&x->pipe);
        free(x);
        sl_conn_abort(c);
        return;
    }
    uv_timer_init(srv->loop, &x->timer);
    x->timer.data = x;
    uv_timer_start(&x->timer, creation_timeout_cb, sl_conn_cfg(c)->creation_timeout_ms, 0);
    sl_conn_flush(c); /* the 101 */
    sl_conn_upgrade(c, &spdy_rc_proto, x, leftover, len);
}
