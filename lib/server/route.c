/* Request dispatch: route, method, token, then the upgrade. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http/http_response.h"
#include "server/server_impl.h"
#include "server/spdy_upgrade.h"
#include "server/stream_req.h"
#include "ws/ws_handshake.h"

/* WebSocket subprotocols of exec/attach (protocol notes §6.1, plus v5). */
static const char *const rc_ws_protocols[] = {
    "v5.channel.k8s.io",
    "v4.channel.k8s.io",
    "v4.base64.channel.k8s.io",
    "channel.k8s.io",
    "base64.channel.k8s.io",
    "",
    NULL,
};

/* SPDY remote-command versions. No v5: client-go offers it first, but it
 * would run a v5 SPDY session exactly like v4 and no Go server accepts it;
 * v5's only addition, the CLOSE signal, is a WebSocket message (over SPDY a
 * stream FIN does that job). Choosing v4 is what every client expects. */
static const char *const rc_spdy_protocols[] = {
    "v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io", NULL,
};
static const char *const pf_spdy_protocols[] = {"portforward.k8s.io", NULL};

/* Legacy WebSocket port-forward (protocol notes §8.1). */
static const char *const pf_ws_protocols[] = {
    "v4.channel.k8s.io",
    "v4.base64.channel.k8s.io",
    "",
    NULL,
};

/* Channels 2i and 2i+1 must fit in one byte. */
#define SL_WS_PF_MAX_PORTS 127

static void answer(sl_conn *c, int status, const char *extra, const char *body)
{
    sl_http_write_error(sl_conn_out(c), status, extra, body);
    sl_conn_finish(c);
}

static sl_token_kind kind_of(const char *m, size_t n)
{
    if (n == 4 && !memcmp(m, "exec", 4))
        return SL_TOKEN_EXEC;
    if (n == 6 && !memcmp(m, "attach", 6))
        return SL_TOKEN_ATTACH;
    return SL_TOKEN_PORTFORWARD;
}

static bool ports_ok(const sl_portforward_request *p)
{
    if (p->nports == 0 || p->nports > SL_WS_PF_MAX_PORTS)
        return false;
    for (size_t i = 0; i < p->nports; i++)
        if (p->ports[i] == 0)
            return false;
    return true;
}

/* True when the client lists proto in Sec-WebSocket-Protocol. */
static int match_offer(const char *elem, size_t len, void *arg)
{
    return strlen(arg) == len && !memcmp(elem, arg, len);
}

static bool sl_ws_offers(const sl_http_request *r, const char *proto)
{
    return sl_http_header_each(r, "Sec-WebSocket-Protocol", match_offer, (void *)proto) != 0;
}

static void upgrade_ws(sl_server *s, sl_conn *c, const sl_http_request *r, sl_stream_req *req,
                       const uint8_t *leftover, size_t len)
{
    bool pf = req->kind == SL_TOKEN_PORTFORWARD;
    /* The SPDY tunnel takes its ports from stream headers, not the request. */
    if (pf && sl_ws_offers(r, "SPDY/3.1+portforward.k8s.io")) {
        const char *tunnel_only[] = {"SPDY/3.1+portforward.k8s.io", NULL};
        const char *chosen = NULL;
        if (sl_ws_handshake(r, tunnel_only, &chosen, sl_conn_out(c)) != 0) {
            sl_stream_req_free(req);
            sl_conn_finish(c);
            return;
        }
        sl_conn_describe(c, req, "websocket-tunnel", chosen);
        sl_spdy_tunnel_start(s, c, req, leftover, len);
        return;
    }
    if (pf && !ports_ok(&req->u.pf)) {
        sl_stream_req_free(req);
        answer(c, 400, NULL,
               "port-forward over WebSocket needs 1 to 127 ports, each 1-65535, in the "
               "PortForward request\n");
        return;
    }
    const char *chosen = NULL;
    int st = sl_ws_handshake(r, pf ? pf_ws_protocols : rc_ws_protocols, &chosen, sl_conn_out(c));
    if (st != 0) {
        sl_stream_req_free(req);
        sl_conn_finish(c); /* the handshake wrote the error answer */
        return;
    }
    sl_conn_describe(c, req, "websocket", chosen);
    if (pf)
        sl_ws_pf_start(s, c, req, chosen, leftover, len);
    else
        sl_ws_rc_start(s, c, req, chosen, leftover, len);
}

static void upgrade_spdy(sl_server *s, sl_conn *c, const sl_http_request *r, sl_stream_req *req,
                         const uint8_t *leftover, size_t len)
{
    bool pf = req->kind == SL_TOKEN_PORTFORWARD;
    const char *chosen = NULL;
    if (sl_spdy_upgrade(r, pf ? pf_spdy_protocols : rc_spdy_protocols, &chosen, sl_conn_out(c)) !=
        0) {
        sl_stream_req_free(req);
        sl_conn_finish(c); /* the error answer is queued */
        return;
    }
    sl_conn_describe(c, req, "spdy", chosen);
    if (pf)
        sl_spdy_pf_start(s, c, req, leftover, len);
    else
        sl_spdy_rc_start(s, c, req, chosen, leftover, len);
}

void sl_server_upgrade(sl_server *s, sl_conn *c, const sl_http_request *r, sl_stream_req *req,
                       const uint8_t *leftover, size_t len)
{
    if (sl_ws_is_upgrade(r)) {
        upgrade_ws(s, c, r, req, leftover, len);
        return;
    }
    upgrade_spdy(s, c, r, req, leftover, len);
}

/* The request a token names, or NULL after answering the client. */
static sl_stream_req *consume_token(sl_server *s, sl_conn *c, const sl_http_request *r)
{
    const char *method, *token;
    size_t mlen, tlen;
    if (sl_url_match(&s->url, r->path, &method, &mlen, &token, &tlen) < 0) {
        answer(c, 404, NULL, "404 page not found\n");
        return NULL;
    }
    /* The method is checked before the token so a wrong one does not burn it. */
    if (strcmp(r->method, "GET") != 0 && strcmp(r->method, "POST") != 0) {
        answer(c, 405, "Allow: GET, POST\r\n", "405: Method Not Allowed\n");
        return NULL;
    }
    sl_token_kind kind = kind_of(method, mlen);
    sl_stream_req *req = sl_token_cache_consume(s->tokens, token, tlen, kind, uv_now(s->loop));
    if (!req)
        answer(c, 404, NULL, "404 page not found\n");
    return req;
}

void sl_server_route(sl_server *s, sl_conn *c, const sl_http_request *r, const uint8_t *leftover,
                     size_t len)
{
    /* An adopted connection's token was consumed where it was accepted. */
    sl_stream_req *req = sl_conn_take_adopted(c);
    if (!req) {
        if (!(req = consume_token(s, c, r)))
            return;
        if (s->handoff_fn && sl_conn_handoff(c, req, len))
            return;
    }
    sl_server_upgrade(s, c, r, req, leftover, len);
}
