/* Remote command, client side, over SPDY or WebSocket (see crc.h). */
#include "client/crc.h"

#include <stdlib.h>
#include <string.h>

#include "client/status.h"
#include "client/wsch.h"
#include "spdy/spdy_session.h"
#include "ws/ws_conn.h"

#define NCH 5
#define WS_CLOSE_CH 255 /* v5 CLOSE signal */

struct sl_crc {
    sl_crc_params p;
    sl_crc_callbacks cb;
    void *arg;
    sl_bufq *out;
    sl_spdy_session *s; /* SPDY */
    uint32_t sid[NCH];  /* SPDY stream per channel, 0 = none */
    bool ch_ended[NCH];
    sl_ws_conn *ws; /* WebSocket */
    uint8_t *enc;   /* WebSocket: message being built */
    size_t enc_cap;
    uint16_t close_code;
    bool close_seen;
    uint8_t *status; /* error-channel bytes */
    size_t status_len;
    bool ended, goaway, stdin_done, stdin_reported;
};

static const char *const type_names[NCH] = {"stdin", "stdout", "stderr", "error", "resize"};

static void finish(sl_crc *c, const sl_crc_end *e)
{
    if (c->ended)
        return;
    c->ended = true;
    if (c->cb.on_end)
        c->cb.on_end(c->arg, e);
}

static void fail(sl_crc *c, sl_client_err_kind kind, const char *msg)
{
    sl_crc_end e = {.exited = false, .exit_code = -1, .kind = kind, .message = msg};
    finish(c, &e);
}

/* The error channel is complete: decode it per version. */
static void finish_status(sl_crc *c)
{
    sl_status st;
    sl_status_decode(c->p.version, c->status, c->status_len, &st);
    sl_crc_end e = {
        .exited = st.exited,
        .exit_code = st.exit_code,
        .kind = SL_CLIENT_ERR_REMOTE,
        .message = st.exited && st.exit_code == 0 ? NULL : st.message,
    };
    finish(c, &e);
}

static void add_status(sl_crc *c, const uint8_t *data, size_t len)
{
    if (c->status_len + len > SL_CLIENT_MAX_STATUS) {
        fail(c, SL_CLIENT_ERR_PROTOCOL, "the server's status is longer than the limit");
        return;
    }
    uint8_t *n = realloc(c->status, c->status_len + len + 1);
    if (!n) {
        fail(c, SL_CLIENT_ERR_LOCAL, "out of memory");
        return;
    }
    c->status = n;
    memcpy(c->status + c->status_len, data, len);
    c->status_len += len;
}

static void output(sl_crc *c, int ch, const uint8_t *data, size_t len)
{
    if (ch == SL_CRC_ERROR)
        add_status(c, data, len);
    else if (len && !c->ended && c->cb.on_output &&
             ((ch == SL_CRC_STDOUT && c->p.out) || (ch == SL_CRC_STDERR && c->p.err)))
        c->cb.on_output(c->arg, ch, data, len);
}

static void stdin_closed(sl_crc *c)
{
    c->stdin_done = true;
    if (!c->stdin_reported && c->p.in && !c->ended) {
        c->stdin_reported = true;
        if (c->cb.on_stdin_closed)
            c->cb.on_stdin_closed(c->arg);
    }
}

/* ---- SPDY ---------------------------------------------------------------- */

static int channel_of(const sl_crc *c, uint32_t id)
{
    for (int ch = 0; ch < NCH; ch++)
        if (c->sid[ch] == id)
            return ch;
    return -1;
}

static void check_done(sl_crc *c)
{
    if (c->ended || !c->ch_ended[SL_CRC_ERROR])
        return;
    if (c->sid[SL_CRC_STDOUT] && !c->ch_ended[SL_CRC_STDOUT])
        return;
    if (c->sid[SL_CRC_STDERR] && !c->ch_ended[SL_CRC_STDERR])
        return;
    finish_status(c);
}

static void ch_end(sl_crc *c, uint32_t id)
{
    int ch = channel_of(c, id);
    if (ch < 0 || c->ch_ended[ch])
        return;
    c->ch_ended[ch] = true;
    if (ch == SL_CRC_STDIN)
        stdin_closed(c);
    check_done(c);
}

static void s_on_data(void *arg, uint32_t id, const uint8_t *data, size_t len)
{
    sl_crc *c = arg;
    int ch = channel_of(c, id);
    if (ch == SL_CRC_STDOUT || ch == SL_CRC_STDERR) {
        if (!c->ended) {
            output(c, ch, data, len); /* credit comes back with sl_crc_consumed */
            return;
        }
    } else if (ch == SL_CRC_ERROR) {
        add_status(c, data, len);
    }
    sl_spdy_stream_consumed(c->s, id, len);
}

static void s_on_fin(void *arg, uint32_t id)
{
    ch_end(arg, id);
}

static void s_on_reset(void *arg, uint32_t id, uint32_t status)
{
    (void)status; /* a reset reads as EOF, as in spdystream */
    ch_end(arg, id);
}

static void s_on_stream_close(void *arg, uint32_t id)
{
    ch_end(arg, id);
}

static void s_on_goaway(void *arg, uint32_t last_id, uint32_t status)
{
    sl_crc *c = arg;
    (void)last_id;
    (void)status;
    c->goaway = true;
}

static void s_on_pong(void *arg, uint32_t id)
{
    sl_crc *c = arg;
    (void)id;
    if (c->cb.on_pong)
        c->cb.on_pong(c->arg);
}

static const sl_spdy_callbacks spdy_cb = {
    .on_data = s_on_data,
    .on_fin = s_on_fin,
    .on_reset = s_on_reset,
    .on_stream_close = s_on_stream_close,
    .on_goaway = s_on_goaway,
    .on_pong = s_on_pong,
};

static int spdy_open(sl_crc *c, int ch)
{
    const char *t = type_names[ch];
    sl_spdy_nv nv = {"streamtype", 10, t, strlen(t)};
    return sl_spdy_stream_open(c->s, &nv, 1, false, &c->sid[ch]);
}

/* client-go's order: error, stdin, stdout, stderr, resize. */
static int spdy_start(sl_crc *c)
{
    const bool want[NCH] = {
        [SL_CRC_ERROR] = true,
        [SL_CRC_STDIN] = c->p.in,
        [SL_CRC_STDOUT] = c->p.out,
        [SL_CRC_STDERR] = c->p.err && !c->p.tty,
        [SL_CRC_RESIZE] = c->p.tty && c->p.version >= 3,
    };
    static const int order[NCH] = {SL_CRC_ERROR, SL_CRC_STDIN, SL_CRC_STDOUT, SL_CRC_STDERR,
                                   SL_CRC_RESIZE};
    for (int i = 0; i < NCH; i++) {
        if (!want[order[i]])
            continue;
        int rc = spdy_open(c, order[i]);
        if (rc != SL_OK)
            return rc;
    }
    return SL_OK;
}

/* ---- WebSocket ------------------------------------------------------------ */

static void w_on_msg(void *arg, int is_text, uint8_t *data, size_t len)
{
    sl_crc *c = arg;
    if (c->ended || len == 0) /* empty messages are ignored, as client-go does */
        return;
    if (is_text) {
        fail(c, SL_CLIENT_ERR_PROTOCOL, "unexpected text message from the server");
        return;
    }
    output(c, data[0], data + 1, len - 1);
}

static void w_on_close(void *arg, uint16_t code)
{
    sl_crc *c = arg;
    c->close_seen = true;
    c->close_code = code;
}

static void w_on_pong(void *arg)
{
    sl_crc *c = arg;
    if (c->cb.on_pong)
        c->cb.on_pong(c->arg);
}

static const sl_ws_callbacks ws_cb = {.on_msg = w_on_msg, .on_close = w_on_close};

static int ws_send(sl_crc *c, uint8_t ch, const uint8_t *data, size_t len)
{
    return sl_wsch_send(c->ws, &c->enc, &c->enc_cap, ch, data, len);
}

static void ws_after_recv(sl_crc *c, int rv)
{
    char msg[SL_WSCH_END_MSG_MAX];
    int kind = sl_wsch_end(rv, c->close_seen, c->close_code, msg);
    if (kind == 0)
        finish_status(c);
    else if (kind > 0)
        fail(c, (sl_client_err_kind)kind, msg);
    sl_ws_conn_flush(c->ws); /* the close echo */
}

/* ---- public ------------------------------------------------------------------ */

sl_crc *sl_crc_new(const sl_crc_params *p, const sl_crc_callbacks *cb, void *arg, sl_bufq *out)
{
    if (p->transport != SL_TRANSPORT_SPDY && p->transport != SL_TRANSPORT_WEBSOCKET)
        return NULL;
    sl_crc *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->p = *p;
    c->cb = *cb;
    c->arg = arg;
    c->out = out;
    if (p->transport == SL_TRANSPORT_SPDY) {
        c->s = sl_spdy_session_new(SL_SPDY_CLIENT, &spdy_cb, c, out, NULL);
        /* per-stream back-pressure from a server that enforces windows */
        if (c->s && p->spdy_window &&
            sl_spdy_session_announce_window(c->s, p->spdy_window) != SL_OK) {
            sl_spdy_session_free(c->s);
            c->s = NULL;
        }
    } else {
        size_t max = p->max_ws_message ? p->max_ws_message : SL_CLIENT_MAX_WS_MESSAGE;
        c->ws = sl_ws_conn_new_client(&ws_cb, c, out, max);
        if (c->ws)
            sl_ws_conn_set_on_pong(c->ws, w_on_pong);
    }
    if (!c->s && !c->ws) {
        free(c);
        return NULL;
    }
    return c;
}

void sl_crc_free(sl_crc *c)
{
    if (!c)
        return;
    sl_spdy_session_free(c->s);
    sl_ws_conn_free(c->ws);
    free(c->enc);
    free(c->status);
    free(c);
}

int sl_crc_start(sl_crc *c)
{
    return c->s ? spdy_start(c) : SL_OK;
}

int sl_crc_recv(sl_crc *c, const uint8_t *data, size_t len)
{
    if (c->ended)
        return SL_OK; /* late bytes after the end (a close echo, ...) */
    if (c->s) {
        int rv = sl_spdy_session_recv(c->s, data, len);
        if (rv < 0)
            fail(c, rv == SL_ERR_NOMEM ? SL_CLIENT_ERR_LOCAL : SL_CLIENT_ERR_PROTOCOL,
                 rv == SL_ERR_NOMEM ? "out of memory" : "SPDY protocol error from the server");
        return rv < 0 ? rv : SL_OK;
    }
    int rv = sl_ws_conn_recv(c->ws, data, len);
    ws_after_recv(c, rv);
    return rv < 0 ? rv : SL_OK;
}

void sl_crc_eof(sl_crc *c)
{
    if (c->ended)
        return;
    /* After GOAWAY or a finished error stream the server just closed the
     * connection (spdystream and we do: RST, GOAWAY, close). */
    if (c->s && (c->goaway || c->ch_ended[SL_CRC_ERROR]))
        finish_status(c);
    else
        fail(c, SL_CLIENT_ERR_LOST, "the server closed the connection before the session ended");
}

int sl_crc_stdin(sl_crc *c, const uint8_t *data, size_t len)
{
    if (c->ended)
        return SL_ERR_CLOSED;
    if (!c->p.in || c->stdin_done)
        return SL_ERR_STATE;
    if (c->s)
        return sl_spdy_stream_send(c->s, c->sid[SL_CRC_STDIN], data, len, false);
    return ws_send(c, SL_CRC_STDIN, data, len);
}

int sl_crc_stdin_eof(sl_crc *c)
{
    if (c->ended)
        return SL_ERR_CLOSED;
    if (!c->p.in || c->stdin_done)
        return SL_ERR_STATE;
    c->stdin_done = true;
    if (c->s)
        return sl_spdy_stream_close(c->s, c->sid[SL_CRC_STDIN]);
    if (c->p.version < 5)
        return SL_ERR_UNSUPPORTED; /* v4 has no way to say it (issue #89899) */
    uint8_t ch = SL_CRC_STDIN;
    return ws_send(c, WS_CLOSE_CH, &ch, 1);
}

size_t sl_crc_stdin_pending(const sl_crc *c)
{
    if (c->s)
        return c->sid[SL_CRC_STDIN] ? sl_spdy_stream_pending(c->s, c->sid[SL_CRC_STDIN]) : 0;
    return sl_ws_conn_queued(c->ws);
}

int sl_crc_resize(sl_crc *c, uint16_t width, uint16_t height)
{
    if (c->ended)
        return SL_ERR_CLOSED;
    char msg[SL_RESIZE_MSG_MAX];
    size_t n = sl_resize_format(msg, width, height);
    if (c->s) {
        if (!c->sid[SL_CRC_RESIZE] || c->ch_ended[SL_CRC_RESIZE])
            return SL_ERR_STATE;
        return sl_spdy_stream_send(c->s, c->sid[SL_CRC_RESIZE], (const uint8_t *)msg, n, false);
    }
    if (!c->p.tty)
        return SL_ERR_STATE;
    return ws_send(c, SL_CRC_RESIZE, (const uint8_t *)msg, n);
}

void sl_crc_consumed(sl_crc *c, int ch, size_t n)
{
    if (c->s && ch >= 0 && ch < NCH && c->sid[ch])
        sl_spdy_stream_consumed(c->s, c->sid[ch], n); /* NOTFOUND: the stream is gone */
}

int sl_crc_ping(sl_crc *c)
{
    if (c->s)
        return sl_spdy_ping(c->s, NULL);
    int rc = sl_ws_conn_ping(c->ws);
    return rc == SL_OK ? sl_ws_conn_flush(c->ws) : rc;
}

int sl_crc_flush(sl_crc *c, size_t high_water)
{
    if (c->s)
        return sl_spdy_session_flush(c->s, high_water);
    return sl_ws_conn_flush(c->ws);
}

void sl_crc_close(sl_crc *c)
{
    if (c->s) {
        sl_spdy_goaway(c->s, SL_SPDY_GOAWAY_OK);
        return;
    }
    if (!sl_ws_conn_close_sent(c->ws))
        sl_ws_conn_close(c->ws, 1000, "");
    sl_ws_conn_flush(c->ws);
}

bool sl_crc_ended(const sl_crc *c)
{
    return c->ended;
}
