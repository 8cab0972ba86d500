/* Port-forward, client side, over SPDY and SPDY tunnelled in WebSocket
 * (see cpf.h); the legacy channel protocol is in cpf_legacy.c. */
#include "client/cpf_int.h"
#include "client/wsch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest WebSocket message a tunnel writes at once. */
#define TUNNEL_MSG_MAX (64u * 1024)

static bool is_legacy(const sl_cpf *c)
{
    return c->p.transport == SL_TRANSPORT_WEBSOCKET_LEGACY;
}

void sl_cpf_unlink(sl_cpf *c, sl_cpf_conn *k)
{
    for (sl_cpf_conn **pp = &c->conns; *pp; pp = &(*pp)->next) {
        if (*pp == k) {
            *pp = k->next;
            return;
        }
    }
}

/* Moves the tunnel's SPDY bytes into binary messages. */
static void tunnel_out(sl_cpf *c)
{
    if (!c->ws || is_legacy(c))
        return;
    while (sl_bufq_len(&c->tbuf) > 0) {
        if (!c->enc) {
            c->enc = malloc(TUNNEL_MSG_MAX);
            if (!c->enc)
                return;
            c->enc_cap = TUNNEL_MSG_MAX;
        }
        size_t n = sl_bufq_copyout(&c->tbuf, c->enc, TUNNEL_MSG_MAX);
        if (sl_ws_conn_send_msg(c->ws, WSLAY_BINARY_FRAME, c->enc, n) != SL_OK)
            break; /* closed: the bytes have nowhere to go */
        sl_bufq_consume(&c->tbuf, n);
    }
    sl_ws_conn_flush(c->ws);
}

/* ---- ending ---------------------------------------------------------------- */

void sl_cpf_conn_free(sl_cpf_conn *k)
{
    sl_bufq_fini(&k->held_out);
    free(k);
}

void sl_cpf_end_conn(sl_cpf *c, sl_cpf_conn *k, const char *err, bool aborted)
{
    sl_cpf_unlink(c, k);
    if (c->cb.on_conn_end)
        c->cb.on_conn_end(c->arg, k->user, err, aborted);
    sl_cpf_conn_free(k);
}

void sl_cpf_end_session(sl_cpf *c, int kind, const char *msg)
{
    if (c->ended)
        return;
    c->ended = true;
    if (is_legacy(c)) {
        sl_cpf_legacy_end_all(c, kind ? msg : NULL, kind != 0);
    } else {
        while (c->conns) {
            sl_cpf_conn *k = c->conns;
            sl_cpf_end_conn(c, k, kind ? msg : "the server ended the session", !k->remote_eof);
        }
    }
    if (c->cb.on_end)
        c->cb.on_end(c->arg, kind, msg);
}

/* ---- SPDY callbacks -------------------------------------------------------- */

static sl_cpf_conn *by_stream(const sl_cpf *c, uint32_t id, bool *data)
{
    for (sl_cpf_conn *k = c->conns; k; k = k->next) {
        if (k->data_id == id || k->error_id == id) {
            *data = k->data_id == id;
            return k;
        }
    }
    return NULL;
}

static void maybe_end(sl_cpf *c, sl_cpf_conn *k)
{
    if (!k->data_gone || !k->error_gone)
        return;
    const char *err = k->err_len ? k->err : NULL;
    if (!err && k->data_reset && !k->remote_eof)
        err = "connection reset by the server";
    sl_cpf_end_conn(c, k, err, k->data_reset);
}

static void s_on_data(void *arg, uint32_t id, const uint8_t *data, size_t len)
{
    sl_cpf *c = arg;
    bool is_data;
    sl_cpf_conn *k = by_stream(c, id, &is_data);
    if (k && is_data && c->cb.on_data) {
        c->cb.on_data(c->arg, k->user, data, len); /* credit with sl_cpf_consumed */
        return;
    }
    if (k && !is_data) {
        size_t n = len < SL_CPF_MAX_ERROR - k->err_len ? len : SL_CPF_MAX_ERROR - k->err_len;
        memcpy(k->err + k->err_len, data, n);
        k->err_len += n;
        k->err[k->err_len] = '\0';
    }
    sl_spdy_stream_consumed(c->s, id, len);
}

static void s_on_fin(void *arg, uint32_t id)
{
    sl_cpf *c = arg;
    bool is_data;
    sl_cpf_conn *k = by_stream(c, id, &is_data);
    if (k && is_data && !k->remote_eof) {
        k->remote_eof = true;
        if (c->cb.on_remote_eof)
            c->cb.on_remote_eof(c->arg, k->user);
    }
}

static void s_on_reset(void *arg, uint32_t id, uint32_t status)
{
    sl_cpf *c = arg;
    bool is_data;
    (void)status;
    sl_cpf_conn *k = by_stream(c, id, &is_data);
    if (k && is_data)
        k->data_reset = true;
}

static void s_on_stream_close(void *arg, uint32_t id)
{
    sl_cpf *c = arg;
    bool is_data;
    sl_cpf_conn *k = by_stream(c, id, &is_data);
    if (!k)
        return;
    if (is_data)
        k->data_gone = true;
    else
        k->error_gone = true;
    maybe_end(c, k);
}

static void s_on_goaway(void *arg, uint32_t last_id, uint32_t status)
{
    sl_cpf *c = arg;
    (void)last_id;
    (void)status;
    c->goaway = true;
}

static void s_on_pong(void *arg, uint32_t id)
{
    sl_cpf *c = arg;
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

/* ---- WebSocket callbacks (tunnel and legacy) ---------------------------------- */

static void w_on_msg(void *arg, int is_text, uint8_t *data, size_t len)
{
    sl_cpf *c = arg;
    if (c->ended)
        return;
    if (is_text) {
        sl_cpf_end_session(c, SL_CLIENT_ERR_PROTOCOL, "unexpected text message from the server");
        return;
    }
    if (is_legacy(c)) {
        sl_cpf_legacy_msg(c, data, len);
        return;
    }
    if (sl_spdy_session_recv(c->s, data, len) < 0)
        sl_cpf_end_session(c, SL_CLIENT_ERR_PROTOCOL, "SPDY protocol error from the server");
}

static void w_on_close(void *arg, uint16_t code)
{
    sl_cpf *c = arg;
    c->close_seen = true;
    c->close_code = code;
}

static void w_on_pong(void *arg)
{
    sl_cpf *c = arg;
    if (c->cb.on_pong)
        c->cb.on_pong(c->arg);
}

static const sl_ws_callbacks ws_cb = {.on_msg = w_on_msg, .on_close = w_on_close};

int sl_cpf_ws_send(sl_cpf *c, uint8_t ch, const uint8_t *data, size_t len)
{
    return sl_wsch_send(c->ws, &c->enc, &c->enc_cap, ch, data, len);
}

/* ---- public ------------------------------------------------------------------ */

sl_cpf *sl_cpf_new(const sl_cpf_params *p, const sl_cpf_callbacks *cb, void *arg, sl_bufq *out)
{
    sl_transport t = p->transport;
    if (t != SL_TRANSPORT_SPDY && t != SL_TRANSPORT_WEBSOCKET_TUNNEL &&
        t != SL_TRANSPORT_WEBSOCKET_LEGACY)
        return NULL;
    sl_cpf *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->p = *p;
    c->cb = *cb;
    c->arg = arg;
    c->out = out;
    sl_bufq_init(&c->tbuf);
    for (size_t i = 0; i < SL_CPF_LEGACY_MAX_PORTS; i++)
        sl_bufq_init(&c->slots[i].held);
    size_t max = p->max_ws_message ? p->max_ws_message : SL_CLIENT_MAX_WS_MESSAGE;
    bool ok = true;
    if (t != SL_TRANSPORT_SPDY) {
        c->ws = sl_ws_conn_new_client(&ws_cb, c, out, max);
        ok = c->ws != NULL;
        if (ok)
            sl_ws_conn_set_on_pong(c->ws, w_on_pong);
    }
    if (ok && t != SL_TRANSPORT_WEBSOCKET_LEGACY) {
        c->s = sl_spdy_session_new(SL_SPDY_CLIENT, &spdy_cb, c, c->ws ? &c->tbuf : out, NULL);
        /* per-stream back-pressure from a server that enforces windows */
        ok = c->s &&
             (!p->spdy_window || sl_spdy_session_announce_window(c->s, p->spdy_window) == SL_OK);
    }
    if (!ok) {
        sl_cpf_free(c);
        return NULL;
    }
    tunnel_out(c); /* the SETTINGS */
    return c;
}

void sl_cpf_free(sl_cpf *c)
{
    if (!c)
        return;
    while (c->conns) {
        sl_cpf_conn *k = c->conns;
        c->conns = k->next;
        sl_cpf_conn_free(k);
    }
    sl_spdy_session_free(c->s);
    sl_ws_conn_free(c->ws);
    sl_cpf_legacy_fini(c);
    sl_bufq_fini(&c->tbuf);
    free(c->enc);
    free(c);
}

static int spdy_open_pair(sl_cpf *c, sl_cpf_conn *k)
{
    char rid[24], port[8];
    snprintf(rid, sizeof(rid), "%llu", (unsigned long long)c->next_request_id);
    snprintf(port, sizeof(port), "%u", k->port);
    /* client-go's headers, lower-cased on the wire (protocol notes §4.3) */
    sl_spdy_nv nv[3] = {
        {"streamtype", 10, "error", 5},
        {"port", 4, port, strlen(port)},
        {"requestid", 9, rid, strlen(rid)},
    };
    int rc = sl_spdy_stream_open(c->s, nv, 3, false, &k->error_id);
    if (rc != SL_OK)
        return rc;
    sl_spdy_stream_close(c->s, k->error_id); /* only the server writes on it */
    nv[0].value = "data";
    nv[0].value_len = 4;
    rc = sl_spdy_stream_open(c->s, nv, 3, false, &k->data_id);
    if (rc != SL_OK) {
        sl_spdy_stream_reset(c->s, k->error_id, SL_SPDY_CANCEL);
        return rc;
    }
    c->next_request_id++;
    return SL_OK;
}

int sl_cpf_open(sl_cpf *c, uint16_t port, void *user, sl_cpf_conn **conn)
{
    if (port == 0)
        return SL_ERR_INVAL;
    if (c->ended || c->closing || c->goaway)
        return SL_ERR_CLOSED;
    sl_cpf_conn *k = calloc(1, sizeof(*k));
    if (!k)
        return SL_ERR_NOMEM;
    k->user = user;
    k->port = port;
    k->slot = -1;
    int rc = is_legacy(c) ? sl_cpf_legacy_open(c, k) : spdy_open_pair(c, k);
    if (rc != SL_OK) {
        sl_cpf_conn_free(k);
        return rc == SL_ERR_STATE ? SL_ERR_CLOSED : rc;
    }
    k->next = c->conns;
    c->conns = k;
    *conn = k;
    tunnel_out(c);
    return SL_OK;
}

int sl_cpf_send(sl_cpf *c, sl_cpf_conn *k, const uint8_t *data, size_t len)
{
    if (c->ended)
        return SL_ERR_CLOSED;
    if (is_legacy(c))
        return sl_cpf_legacy_send(c, k, data, len);
    if (k->data_gone)
        return SL_ERR_CLOSED;
    int rc = sl_spdy_stream_send(c->s, k->data_id, data, len, false);
    return rc == SL_ERR_STATE || rc == SL_ERR_NOTFOUND ? SL_ERR_CLOSED : rc;
}

int sl_cpf_shutdown(sl_cpf *c, sl_cpf_conn *k)
{
    if (c->ended || is_legacy(c) || k->data_gone)
        return SL_OK; /* legacy cannot say it (cpf.h) */
    int rc = sl_spdy_stream_close(c->s, k->data_id);
    return rc == SL_ERR_STATE ? SL_OK : rc;
}

void sl_cpf_abort(sl_cpf *c, sl_cpf_conn *k)
{
    sl_cpf_unlink(c, k); /* the resets below must not report it */
    if (is_legacy(c)) {
        sl_cpf_legacy_detach(c, k);
    } else if (!c->ended) {
        if (!k->data_gone)
            sl_spdy_stream_reset(c->s, k->data_id, SL_SPDY_CANCEL);
        if (!k->error_gone)
            sl_spdy_stream_reset(c->s, k->error_id, SL_SPDY_CANCEL);
        tunnel_out(c);
    }
    sl_cpf_conn_free(k);
}

void sl_cpf_ready(sl_cpf *c, sl_cpf_conn *k)
{
    if (is_legacy(c) && !c->ended)
        sl_cpf_legacy_ready(c, k);
}

void sl_cpf_consumed(sl_cpf *c, sl_cpf_conn *k, size_t n)
{
    if (c->ended || !c->s || k->data_gone)
        return;
    sl_spdy_stream_consumed(c->s, k->data_id, n);
    tunnel_out(c);
}

size_t sl_cpf_pending(const sl_cpf *c, const sl_cpf_conn *k)
{
    if (!c->s)
        return sl_bufq_len(&k->held_out);
    if (k->data_gone)
        return 0;
    return sl_spdy_stream_pending(c->s, k->data_id);
}

size_t sl_cpf_unbound(const sl_cpf *c)
{
    return c->held;
}

bool sl_cpf_flow_control(const sl_cpf *c)
{
    return c->s && sl_spdy_session_peer_flow_control(c->s);
}

static void ws_after_recv(sl_cpf *c, int rv)
{
    char msg[SL_WSCH_END_MSG_MAX];
    int kind = sl_wsch_end(rv, c->close_seen, c->close_code, msg);
    if (kind >= 0)
        sl_cpf_end_session(c, kind, kind ? msg : NULL);
    tunnel_out(c);
    sl_ws_conn_flush(c->ws); /* the close echo, pongs */
}

int sl_cpf_recv(sl_cpf *c, const uint8_t *data, size_t len)
{
    if (c->ended)
        return SL_OK;
    if (!c->ws) {
        int rv = sl_spdy_session_recv(c->s, data, len);
        if (rv < 0)
            sl_cpf_end_session(c, SL_CLIENT_ERR_PROTOCOL, "SPDY protocol error from the server");
        return rv < 0 ? rv : SL_OK;
    }
    int rv = sl_ws_conn_recv(c->ws, data, len);
    ws_after_recv(c, rv);
    return rv < 0 ? rv : SL_OK;
}

void sl_cpf_eof(sl_cpf *c)
{
    if (c->goaway)
        sl_cpf_end_session(c, 0, "the server ended the session");
    else
        sl_cpf_end_session(c, SL_CLIENT_ERR_LOST, "the server closed the connection");
}

int sl_cpf_flush(sl_cpf *c, size_t high_water)
{
    if (!c->s)
        return sl_ws_conn_flush(c->ws);
    if (!c->ws)
        return sl_spdy_session_flush(c->s, high_water);
    size_t used = sl_bufq_len(c->out);
    int rc = used < high_water ? sl_spdy_session_flush(c->s, high_water - used) : SL_OK;
    tunnel_out(c);
    return rc;
}

int sl_cpf_ping(sl_cpf *c)
{
    int rc;
    if (c->s) {
        rc = sl_spdy_ping(c->s, NULL);
        tunnel_out(c);
        return rc;
    }
    rc = sl_ws_conn_ping(c->ws);
    return rc == SL_OK ? sl_ws_conn_flush(c->ws) : rc;
}

void sl_cpf_close(sl_cpf *c)
{
    if (c->closing)
        return;
    c->closing = true;
    while (c->conns)
        sl_cpf_abort(c, c->conns);
    if (!c->ended && c->s)
        sl_spdy_goaway(c->s, SL_SPDY_GOAWAY_OK);
    tunnel_out(c);
    if (c->ws && !sl_ws_conn_close_sent(c->ws)) {
        sl_ws_conn_close(c->ws, 1000, "");
        sl_ws_conn_flush(c->ws);
    }
    sl_cpf_end_session(c, 0, NULL);
}

bool sl_cpf_ended(const sl_cpf *c)
{
    return c->ended;
}
