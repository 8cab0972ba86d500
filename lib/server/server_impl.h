/* Internals of sl_server shared by the listener, the connections and the
 * protocol sessions. */
#ifndef SL_SERVER_IMPL_H
#define SL_SERVER_IMPL_H

#include <uv.h>
#include "http/http_head.h"
#include "server/conn.h"
#include "server/stream_req.h"
#include "server/tls.h"
#include "server/token_cache.h"
#include "util/abi.h"
#include "util/url.h"
#include "sluice/server.h"

struct sl_server {
    uv_loop_t *loop;
    sl_server_config cfg; /* strings below are owned copies */
    char *address, *base_path, *advertise_host;
    sl_runtime_ops ops;   /* the caller's vtable at this library's size */
    sl_runtime runtime;   /* .ops = &ops, .data = the caller's */
    const sl_runtime *rt; /* = &runtime */
    char errmsg[256];     /* why the last sl_server_start failed; "" none */
    uv_tcp_t listener;
    bool listening;
    sl_token_cache *tokens;
    sl_url_base url;
    char *base_url;
    sl_conn *conns; /* doubly linked list of live connections */
    size_t nconns;
    size_t nsessions; /* upgraded connections */
    uint64_t refused; /* connections answered 503 beyond max_connections */
    bool closing;
    int open_handles;
    void (*close_cb)(sl_server *s, void *arg);
    void *close_arg;
    sl_server_handoff_fn handoff_fn; /* NULL: serve every session here */
    void *handoff_arg;
    sl_server_session_fn session_fn; /* NULL: nobody observes sessions */
    void *session_arg;
    bool started;
    void *tls_ctx;          /* SSL_CTX; NULL: plain HTTP */
    sl_tls_conn *tls_conns; /* doubly linked list of live TLS connections */
    size_t ntls;            /* TLS connections whose handles are not all closed */
    size_t ntls_handshaking;
};

/* Dispatches a complete request head: route, token (or the request an
 * adopted connection came with), then the hand-off or the upgrade.
 * leftover are bytes that followed the head. */
void sl_server_route(sl_server *srv, sl_conn *c, const sl_http_request *req,
                     const uint8_t *leftover, size_t len);

/* Upgrades c for req (taken): WebSocket or SPDY, exec/attach or
 * port-forward, or an error answer. */
void sl_server_upgrade(sl_server *srv, sl_conn *c, const sl_http_request *r, sl_stream_req *req,
                       const uint8_t *leftover, size_t len);

/* Starts a WebSocket remote-command session on c (101 already decided by
 * the caller's handshake). Takes ownership of req. */
void sl_ws_rc_start(sl_server *srv, sl_conn *c, sl_stream_req *req, const char *proto,
                    const uint8_t *leftover, size_t len);

/* Starts a legacy WebSocket port-forward session on c. Takes req. */
void sl_ws_pf_start(sl_server *srv, sl_conn *c, sl_stream_req *req, const char *proto,
                    const uint8_t *leftover, size_t len);

/* SPDY sessions (101 already queued). Take req. */
void sl_spdy_rc_start(sl_server *srv, sl_conn *c, sl_stream_req *req, const char *proto,
                      const uint8_t *leftover, size_t len);
void sl_spdy_pf_start(sl_server *srv, sl_conn *c, sl_stream_req *req, const uint8_t *leftover,
                      size_t len);

void sl_spdy_tunnel_start(sl_server *srv, sl_conn *c, sl_stream_req *req, const uint8_t *leftover,
                          size_t len);

/* Names what c is about to serve (before sl_conn_upgrade), for the
 * session observer: transport and protocol are static or live as long as
 * the server. */
void sl_conn_describe(sl_conn *c, const sl_stream_req *req, const char *transport,
                      const char *protocol);

/* Called when a connection ends, to keep the count and finish a close. */
void sl_server_conn_gone(sl_server *srv, sl_conn *c, bool was_session);

#endif
