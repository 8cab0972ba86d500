/* One accepted TCP connection of the streaming server: reads the request
 * head, then hands the socket to a protocol session (WebSocket or SPDY).
 * The only layer that touches the socket. */
#ifndef SL_CONN_H
#define SL_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>
#include "util/bufq.h"
#include "server/stream_req.h"

typedef struct sl_server sl_server;
typedef struct sl_conn sl_conn;

/* What an upgraded connection calls into. */
typedef struct sl_conn_proto {
    /* Bytes from the peer. */
    void (*recv)(void *s, const uint8_t *data, size_t len);
    /* The output queue fell to the low-water mark. */
    void (*drained)(void *s);
    /* The peer is gone or the server is closing: release everything; the
     * connection must not be used after this returns. */
    void (*closed)(void *s);
    /* Optional. While reads are paused, send the peer something small (a
     * ping): a peer whose socket is closed answers with RST, which is how
     * we learn it left when its FIN waits behind bytes we do not read. */
    void (*poke)(void *s);
} sl_conn_proto;

/* Accepts one connection from the listener. */
void sl_conn_accept(sl_server *srv, uv_stream_t *listener);

/* Serves a connection accepted elsewhere (sl_server_adopt): fd and req are
 * taken, head is copied; cfg holds this connection's limits. Returns as
 * sl_server_adopt. */
int sl_conn_adopt(sl_server *srv, int fd, const uint8_t *head, size_t len, sl_stream_req *req,
                  const sl_server_config *cfg);

/* The request an adopted connection came with (ownership passes), or NULL. */
sl_stream_req *sl_conn_take_adopted(sl_conn *c);

/* Hands c over to the server's hand-off function: req is taken, len is
 * the number of bytes that followed the head. False (nothing done, req
 * still the caller's) when c was accepted before the hand-off was set. */
bool sl_conn_handoff(sl_conn *c, sl_stream_req *req, size_t len);

/* The limits that apply to this connection. */
const sl_server_config *sl_conn_cfg(const sl_conn *c);

/* Installs the protocol session and feeds it `len` leftover bytes read
 * after the request head. */
void sl_conn_upgrade(sl_conn *c, const sl_conn_proto *proto, void *s, const uint8_t *leftover,
                     size_t len);

sl_bufq *sl_conn_out(sl_conn *c);
/* Starts writing whatever is queued. */
void sl_conn_flush(sl_conn *c);
/* True while queued output is at or above the server's high-water mark. */
bool sl_conn_congested(const sl_conn *c);
void sl_conn_pause_read(sl_conn *c, bool pause);
/* Writes what is queued, then closes. */
void sl_conn_finish(sl_conn *c);
/* Why the session ends, when its protocol knows better than the socket
 * (a WebSocket close from the client); the first reason set stays. */
void sl_conn_set_end_reason(sl_conn *c, const char *reason);
/* Closes at once; queued output is dropped. */
void sl_conn_abort(sl_conn *c);

/* Ends every connection of the server (shutdown). */
void sl_conn_close_all(sl_server *srv);

#endif
